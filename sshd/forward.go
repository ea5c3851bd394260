package sshd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// forwardDialTimeout bounds Remote.Dial: a target that neither accepts nor
// refuses must not hold a channel open (and a slot taken) for long.
const forwardDialTimeout = 30 * time.Second

// directTCPIP is the payload of a "direct-tcpip" channel open (RFC 4254
// 7.2): where to connect, and where the client's connection came from.
type directTCPIP struct {
	Host     string
	Port     uint32
	OrigHost string
	OrigPort uint32
}

// forwardChannel serves a "direct-tcpip" channel (ssh -L, -D, -W): it
// connects, from inside the instance the login name names, to the host and
// port asked for, and copies bytes both ways until both sides are done,
// the connection is idle for ForwardIdleTimeout or the key is revoked.
// Every refusal is a rejected channel whose message the client prints.
func (s *Server) forwardChannel(cs *connState, nc gossh.NewChannel) {
	var req directTCPIP
	if err := gossh.Unmarshal(nc.ExtraData(), &req); err != nil || req.Port == 0 || req.Port > 65535 || !validTargetHost(req.Host) {
		_ = nc.Reject(gossh.ConnectionFailed, "termgate: malformed direct-tcpip request (want a host name or address and a port in 1-65535)")
		return
	}
	port := int(req.Port)
	s.serveForward(cs, nc, localForward{
		target:     net.JoinHostPort(safeText(req.Host, 255), strconv.Itoa(port)),
		originator: net.JoinHostPort(safeText(req.OrigHost, 64), strconv.Itoa(int(req.OrigPort))),
		decide:     func(a keys.Access) *keys.Refusal { return a.DecideOpen(req.Host, port) },
		open: func(f *forward) (remote.Conn, string) {
			return f.dial(req.Host, port)
		},
	})
}

// directStreamlocal is the payload of a "direct-streamlocal@openssh.com"
// channel open (OpenSSH's PROTOCOL 2.4): the socket's path, and two
// reserved fields.
type directStreamlocal struct {
	Path      string
	Reserved0 string
	Reserved1 uint32
}

// streamlocalChannel serves a "direct-streamlocal@openssh.com" channel
// (ssh -L LPORT:/PATH): it connects to the unix socket PATH inside the
// instance, as forwardChannel does to a port.
func (s *Server) streamlocalChannel(cs *connState, nc gossh.NewChannel) {
	var req directStreamlocal
	if err := gossh.Unmarshal(nc.ExtraData(), &req); err != nil || !validSocketPath(req.Path) {
		_ = nc.Reject(gossh.ConnectionFailed, "termgate: malformed direct-streamlocal request (want a unix socket path of 1-107 printable bytes)")
		return
	}
	s.serveForward(cs, nc, localForward{
		target: "unix:" + req.Path,
		decide: func(a keys.Access) *keys.Refusal { return a.DecideOpenPath() },
		open: func(f *forward) (remote.Conn, string) {
			sd, ok := s.cfg.Remote.(remote.SocketDialer)
			if !ok {
				return nil, "termgate: this gateway's backend cannot connect to unix sockets in instances"
			}
			return f.connect(func(ctx context.Context, inst sessions.Instance) (remote.Conn, error) {
				return sd.DialUnix(ctx, inst, req.Path)
			})
		},
	})
}

// validSocketPath reports whether p can name a unix socket: 1-107 bytes
// (sun_path) of printable ASCII, not an abstract name.
func validSocketPath(p string) bool {
	return p != "" && len(p) <= 107 && p[0] != '@' && validTargetHost(strings.ReplaceAll(p, " ", "_"))
}

// localForward is what a channel asks to connect to: its target as logs
// and the audit name it, where the client's connection came from, the
// decision, and how to connect.
type localForward struct {
	target, originator string
	decide             func(keys.Access) *keys.Refusal
	open               func(*forward) (remote.Conn, string)
}

// serveForward serves a channel that connects into the instance the login
// name names (ssh -L, -D, -W, -L to a socket): the decision, the caps,
// the connection, then the relay until both sides are done, the
// connection is idle for ForwardIdleTimeout or the key is revoked. Every
// refusal is a rejected channel whose message the client prints.
func (s *Server) serveForward(cs *connState, nc gossh.NewChannel, lf localForward) {
	name, target := cs.target.instance, lf.target
	id, why, reason := s.mayForwardBy(cs, name, lf.decide)
	if why != "" {
		cs.log.Debug("forward refused", // Debug: a flood of opens must not flood the log; the audit trail and the client have it
			"instance", clip(name, 128), "target", target, "reason", reason)
		s.cfg.Audit.Event(audit.Forward, who(id, cs.remote), clip(name, 128), "", "target", target, "result", "denied", "reason", reason)
		s.fwdStats.refused.Add(1)
		_ = nc.Reject(gossh.Prohibited, why)
		return
	}
	f := &forward{s: s, cs: cs, name: name, target: target, who: who(id, cs.remote)}
	f.ctx, f.cancel = context.WithCancel(cs.ctx)
	defer f.cancel()
	op, why := s.beginRemote(cs, opForward, name, f.cut)
	if why != "" {
		s.cfg.Audit.Event(audit.Forward, f.who, name, "", "target", target, "result", "denied", "reason", why)
		s.fwdStats.refused.Add(1)
		_ = nc.Reject(gossh.ResourceShortage, why)
		return
	}
	defer op.end()
	conn, why := lf.open(f)
	if why != "" {
		cs.log.Info("forward failed", "instance", name, "target", target, "reason", why)
		s.cfg.Audit.Event(audit.Forward, f.who, name, "", "target", target, "result", "failed", "reason", why)
		s.fwdStats.failed.Add(1)
		_ = nc.Reject(gossh.ConnectionFailed, why)
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		_ = conn.Close()
		return
	}
	if !f.accepted(ch, conn) { // revoked while dialing
		// x/crypto queues a channel's requests behind the connection's
		// reads: they are drained until the close is acknowledged.
		s.track.Go(func() { gossh.DiscardRequests(reqs) })
		s.cfg.Audit.Event(audit.Forward, f.who, name, "", "target", target, "result", "failed", "reason", f.cutWhy())
		return
	}
	start := time.Now()
	r, cause := f.relay(ch, reqs, conn)
	cs.log.Debug("forward ended", "instance", name, "target", target, "cause", cause, "to_target", r.toTarget, "from_target", r.fromTarget)
	s.cfg.Audit.Event(audit.Forward, f.who, name, "", "target", target, "result", "ok",
		"originator", lf.originator,
		"bytes_to_target", r.toTarget, "bytes_from_target", r.fromTarget,
		"duration_ms", time.Since(start).Milliseconds(), "cause", cause)
}

// relay carries an accepted forward (-L's or -R's) to its end, counts it,
// and says what ended it: the cut's reason, if one came, else the
// relay's. A cut by the shutdown gets its one log line (cut.go).
func (f *forward) relay(ch gossh.Channel, reqs <-chan *gossh.Request, conn remote.Conn) (relayResult, string) {
	s, start := f.s, time.Now()
	s.fwdStats.opened.Add(1)
	r := s.relayForward(ch, reqs, conn)
	s.fwdStats.toTarget.Add(uint64(r.toTarget))
	s.fwdStats.fromTarget.Add(uint64(r.fromTarget))
	cause := r.cause
	if why := f.cutWhy(); why != "" {
		cause = why
	}
	if cause == whyShutdown {
		logCut(f.cs.log.With("who", clip(f.who.Name, 128), "target", f.target), "forward", f.who, f.name, cause, r.toTarget, r.fromTarget, start)
	}
	return r, cause
}

// mayForwardBy says why the connection may not forward in the instance
// name (what the client reads, and the audit reason), or returns its
// identity (derived again: the file may have changed since the
// handshake). The decision is decide's on the instance's keys.Access
// (DecideOpen, DecideOpenPath, DecideListen, DecideListenPath); a key
// that may not use the instance learns nothing about it.
func (s *Server) mayForwardBy(cs *connState, name string, decide func(keys.Access) *keys.Refusal) (id keys.Identity, why, reason string) {
	if s.cfg.Remote == nil {
		return keys.Identity{}, "termgate: this gateway cannot forward connections", "no remote runner"
	}
	key := cs.verifiedKey()
	if key == nil {
		return keys.Identity{}, "permission denied", "no verified key"
	}
	id, err := s.authorize(key, cs.remote)
	if err != nil {
		return keys.Identity{}, "permission denied", "key no longer accepted"
	}
	if why := cs.target.problem(); why != "" {
		return id, why, "unusable user name"
	}
	if sessions.CheckName(name) != nil {
		return id, fmt.Sprintf("termgate: log in as the instance to forward into (ssh -L PORT:HOST:PORT INSTANCE@GATEWAY); %q is not an instance name", clip(name, 64)), "invalid instance name"
	}
	acc := id.On(name, s.cfg.Switches)
	r := decide(acc)
	if r == nil && cs.target.login != "" {
		// A forward dials or listens in the instance's network, not as
		// a user; still, LOGIN@ names a login the credential must hold,
		// as it does for every other request.
		_, r = acc.DecideLogin(cs.target.login)
	}
	if r != nil {
		if r.Hidden {
			return id, "termgate: " + sessions.NotFoundMessage(name), r.Reason
		}
		return id, "termgate: " + r.Message, r.Reason
	}
	return id, "", ""
}

// forward is one forwarded connection, for its cut: the channel and the
// stream into the instance once there are some.
type forward struct {
	s      *Server
	cs     *connState
	name   string
	target string
	who    audit.Who
	ctx    context.Context // ends with the forward: Dial and the stream run under it
	cancel context.CancelFunc

	mu     sync.Mutex // guards the fields below; held for no I/O
	ch     gossh.Channel
	conn   remote.Conn
	why    string // set by cut
	cutted bool
}

// dial connects to host:port in the instance, or says why not (what the
// client reads).
func (f *forward) dial(host string, port int) (remote.Conn, string) {
	return f.connect(func(ctx context.Context, inst sessions.Instance) (remote.Conn, error) {
		return f.s.cfg.Remote.Dial(ctx, inst, host, port)
	})
}

// connect runs open (a dial, a unix dial, a fetch of a connection accepted
// in the instance) under the forward's context and forwardDialTimeout, or
// says why it failed (what the client reads).
func (f *forward) connect(open func(context.Context, sessions.Instance) (remote.Conn, error)) (remote.Conn, string) {
	inst, err := f.s.cfg.Registry.Lookup(f.ctx, f.name)
	if err != nil {
		if errors.Is(err, sessions.ErrNotFound) {
			return nil, "termgate: " + sessions.NotFoundMessage(f.name)
		}
		return nil, fmt.Sprintf("termgate: cannot reach instance %q: %s", f.name, safeText(err.Error(), 200))
	}
	// The timer, not a context deadline: the stream may live under ctx.
	timer := time.AfterFunc(forwardDialTimeout, f.cancel)
	conn, err := open(f.ctx, inst)
	timedOut := !timer.Stop()
	var unavailable *remote.Unavailable
	switch {
	case err == nil:
		return conn, ""
	case f.cutWhy() != "":
		return nil, "termgate: access revoked: " + f.cutWhy()
	case timedOut:
		return nil, fmt.Sprintf("termgate: connecting to %s in %q timed out after %v", f.target, f.name, forwardDialTimeout)
	case errors.Is(err, remote.ErrUnsupported):
		return nil, "termgate: this gateway's backend cannot forward connections"
	case errors.As(err, &unavailable):
		return nil, "termgate: " + safeText(unavailable.Why, 300)
	}
	return nil, fmt.Sprintf("termgate: cannot connect to %s in %q: %s", f.target, f.name, safeText(err.Error(), 300))
}

// accepted records the open channel and stream; false (both closed) when
// the forward was cut meanwhile.
func (f *forward) accepted(ch gossh.Channel, conn remote.Conn) bool {
	f.mu.Lock()
	cutted := f.cutted
	if !cutted {
		f.ch, f.conn = ch, conn
	}
	f.mu.Unlock()
	if cutted {
		_ = conn.Close()
		_ = ch.Close()
	}
	return !cutted
}

// cut ends the forward on revocation (remoteOp.cut): Dial is cancelled,
// the channel and the stream are closed, which ends the relay.
func (f *forward) cut(why string) {
	f.mu.Lock()
	if f.cutted {
		f.mu.Unlock()
		return
	}
	f.cutted, f.why = true, why
	ch, conn := f.ch, f.conn
	f.mu.Unlock()
	if why != whyShutdown { // the shutdown's line comes once the relay ended, with its bytes
		f.cs.log.Info("forward cut: access revoked", "instance", f.name, "target", f.target, "reason", why)
	}
	f.cancel()
	if conn != nil {
		_ = conn.Close()
	}
	if ch != nil {
		_ = ch.Close()
	}
}

func (f *forward) cutWhy() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.why
}

// validTargetHost reports whether a direct-tcpip host can be a host name
// or an address: 1-255 bytes of printable ASCII without spaces. Anything
// else could never be dialled, and must not reach a backend (the Docker
// holder gets it as an argument) or a log.
func validTargetHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if h[i] <= ' ' || h[i] >= 0x7f {
			return false
		}
	}
	return true
}

// safeText makes text from a backend or an instance fit for a client's
// terminal and the log: control characters become '?', at most n bytes.
func safeText(s string, n int) string {
	b := []byte(clip(s, n))
	for i, c := range b {
		if c < ' ' || c == 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}
