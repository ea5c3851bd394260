package sshd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// Remote forwarding (ssh -R): a listener inside the instance the login
// name names, each connection made to it carried back to the client as a
// "forwarded-tcpip" (or "forwarded-streamlocal@openssh.com") channel. The
// listener lives until the client cancels it, the connection ends, the
// key is revoked or the gateway shuts down; it holds one remote op (the
// caps of remoteops.go) and each carried connection another.

// maxListenersPerConn bounds the -R listeners of one connection.
const maxListenersPerConn = 16

// listenStartTimeout bounds a listener's start (the helper's upload and
// start, its bind).
const listenStartTimeout = 30 * time.Second

// tcpipForward is the payload of "tcpip-forward" and
// "cancel-tcpip-forward" (RFC 4254 7.1).
type tcpipForward struct {
	Addr string
	Port uint32
}

// streamlocalForward is the payload of "streamlocal-forward@openssh.com"
// and its cancel (OpenSSH's PROTOCOL 2.4).
type streamlocalForward struct {
	Path string
}

// forwardedTCPIP is the payload of a "forwarded-tcpip" channel open: the
// listener as the client asked for it (with the port bound), and the
// peer in the instance.
type forwardedTCPIP struct {
	Addr     string
	Port     uint32
	OrigAddr string
	OrigPort uint32
}

// forwardedStreamlocal is the payload of a
// "forwarded-streamlocal@openssh.com" channel open.
type forwardedStreamlocal struct {
	Path     string
	Reserved string
}

// remoteForwards are one connection's listeners: globalRequests owns it.
type remoteForwards struct {
	s  *Server
	cs *connState
	sc gossh.Conn

	mu        sync.Mutex // guards listeners; held for no I/O
	listeners map[string]*rlistener
	wg        sync.WaitGroup // the accept loops and the connections they carry
}

// rlistener is one -R listener.
type rlistener struct {
	key      string // how cancel names it: "tcp ADDR:PORT" or "unix PATH"
	addr     string // as the client asked ("" for unix)
	port     uint32 // the bound port
	path     string // a unix socket's
	shown    string // for logs and the audit: the bound address or path
	name     string // the instance
	who      audit.Who
	ln       remote.Listener
	cancel   context.CancelFunc
	op       *remoteOp
	once     sync.Once
	closeWhy string
}

// globalRequests answers the connection's global requests, one at a time
// and in order (the protocol matches replies to requests by order):
// tcpip-forward and streamlocal-forward@openssh.com (ssh -R) and their
// cancels; everything else is refused. The listeners end with the
// connection (reqs is closed then).
func (s *Server) globalRequests(cs *connState, sc gossh.Conn, reqs <-chan *gossh.Request) {
	rf := &remoteForwards{s: s, cs: cs, sc: sc, listeners: map[string]*rlistener{}}
	defer rf.closeAll()
	for req := range reqs {
		ok, reply := false, []byte(nil)
		switch req.Type {
		case "tcpip-forward":
			var p tcpipForward
			if gossh.Unmarshal(req.Payload, &p) == nil && p.Port <= 65535 && (p.Addr == "" || validTargetHost(p.Addr)) {
				var port uint32
				port, ok = rf.listenTCP(p.Addr, p.Port)
				if ok && p.Port == 0 { // RFC 4254 7.1: the port chosen
					reply = gossh.Marshal(struct{ Port uint32 }{port})
				}
			}
		case "streamlocal-forward@openssh.com":
			var p streamlocalForward
			if gossh.Unmarshal(req.Payload, &p) == nil && validSocketPath(p.Path) {
				ok = rf.listenUnix(p.Path)
			}
		case "cancel-tcpip-forward":
			var p tcpipForward
			if gossh.Unmarshal(req.Payload, &p) == nil {
				ok = rf.cancel("tcp "+net.JoinHostPort(p.Addr, strconv.Itoa(int(p.Port))), "cancelled by the client")
			}
		case "cancel-streamlocal-forward@openssh.com":
			var p streamlocalForward
			if gossh.Unmarshal(req.Payload, &p) == nil {
				ok = rf.cancel("unix "+p.Path, "cancelled by the client")
			}
		}
		if req.WantReply {
			_ = req.Reply(ok, reply)
		}
	}
}

// listenTCP starts a listener on addr:port in the instance (as
// DecideListen allows), or logs and audits why not.
func (rf *remoteForwards) listenTCP(addr string, port uint32) (uint32, bool) {
	asked := net.JoinHostPort(safeText(addr, 255), strconv.Itoa(int(port)))
	var bind string
	decide := func(a keys.Access) *keys.Refusal {
		var r *keys.Refusal
		bind, r = a.DecideListen(addr, int(port))
		return r
	}
	l := rf.start(asked, decide, "tcp", func() string { return net.JoinHostPort(bind, strconv.Itoa(int(port))) })
	if l == nil {
		return 0, false
	}
	_, p, _ := net.SplitHostPort(l.ln.Addr())
	n, _ := strconv.Atoi(p)
	l.addr, l.port, l.shown = addr, uint32(n), l.ln.Addr()
	l.key = "tcp " + net.JoinHostPort(addr, strconv.Itoa(n))
	if !rf.add(l) {
		return 0, false
	}
	return l.port, true
}

// listenUnix starts a listener on the unix socket path in the instance.
func (rf *remoteForwards) listenUnix(path string) bool {
	l := rf.start("unix:"+path, func(a keys.Access) *keys.Refusal { return a.DecideListenPath() }, "unix", func() string { return path })
	if l == nil {
		return false
	}
	l.path, l.shown, l.key = path, "unix:"+path, "unix "+path
	return rf.add(l)
}

// start decides, takes the listener's op and starts it in the instance:
// nil (logged and audited) when any of them says no.
func (rf *remoteForwards) start(asked string, decide func(keys.Access) *keys.Refusal, network string, where func() string) *rlistener {
	s, cs := rf.s, rf.cs
	name := cs.target.instance
	refuse := func(w audit.Who, result, why string) *rlistener {
		cs.log.Info("remote forwarding (ssh -R) refused", "instance", clip(name, 128), "listen", asked, "reason", why)
		s.cfg.Audit.Event(audit.Forward, w, clip(name, 128), "", "listen", asked, "result", result, "reason", why)
		s.fwdStats.refused.Add(1)
		return nil
	}
	lr, _ := s.cfg.Remote.(remote.ListenRunner)
	if lr == nil {
		return refuse(who(keys.Identity{}, cs.remote), "denied", "this gateway's backend cannot listen in instances")
	}
	id, why, reason := s.mayForwardBy(cs, name, decide)
	if why != "" {
		return refuse(who(id, cs.remote), "denied", reason)
	}
	l := &rlistener{name: name, who: who(id, cs.remote)}
	rf.mu.Lock()
	full := len(rf.listeners) >= maxListenersPerConn
	rf.mu.Unlock()
	if full {
		return refuse(l.who, "denied", fmt.Sprintf("this connection already has %d remote forwards", maxListenersPerConn))
	}
	var ctx context.Context
	ctx, l.cancel = context.WithCancel(cs.ctx)
	op, why := s.beginRemote(cs, opForward, name, func(why string) { rf.close(l, why) })
	if why != "" {
		l.cancel()
		return refuse(l.who, "denied", why)
	}
	l.op = op
	inst, err := s.cfg.Registry.Lookup(ctx, name)
	if err == nil {
		// The timer, not a deadline: the listener lives under ctx.
		timer := time.AfterFunc(listenStartTimeout, l.cancel)
		l.ln, err = lr.Listen(ctx, inst, network, where())
		if !timer.Stop() && err != nil {
			err = fmt.Errorf("starting the listener timed out after %v", listenStartTimeout)
		}
	}
	if err != nil {
		l.cancel()
		op.end()
		var unavailable *remote.Unavailable
		msg := err.Error()
		if errors.Is(err, sessions.ErrNotFound) {
			msg = sessions.NotFoundMessage(name)
		} else if errors.As(err, &unavailable) {
			msg = unavailable.Why
		}
		s.fwdStats.failed.Add(1)
		cs.log.Info("remote forwarding (ssh -R) failed", "instance", name, "listen", asked, "reason", safeText(msg, 300))
		s.cfg.Audit.Event(audit.Forward, l.who, name, "", "listen", asked, "result", "failed", "reason", safeText(msg, 300))
		return nil
	}
	return l
}

// add registers a started listener and starts its accept loop; false
// (the listener closed) when the address is taken on this connection or
// the connection ends meanwhile.
func (rf *remoteForwards) add(l *rlistener) bool {
	rf.mu.Lock()
	_, dup := rf.listeners[l.key]
	closed := rf.listeners == nil
	if !dup && !closed {
		rf.listeners[l.key] = l
	}
	rf.mu.Unlock()
	if dup || closed {
		rf.end(l, "already forwarded on this connection")
		return false
	}
	rf.cs.log.Info("remote forwarding (ssh -R) listening", "instance", l.name, "listen", l.shown)
	rf.s.cfg.Audit.Event(audit.Forward, l.who, l.name, "", "listen", l.shown, "result", "listening")
	rf.wg.Go(func() { rf.acceptLoop(l) })
	return true
}

// acceptLoop carries each connection the listener accepts back to the
// client, until the listener ends.
func (rf *remoteForwards) acceptLoop(l *rlistener) {
	for {
		in, err := l.ln.Accept()
		if err != nil {
			why := "the listener in the instance ended: " + safeText(err.Error(), 200)
			if rf.cs.ctx.Err() != nil { // its stream went with the connection
				why = "the connection ended"
			}
			rf.close(l, why)
			return
		}
		rf.wg.Go(func() { rf.carry(l, in) })
	}
}

// carry opens the client's channel for one accepted connection, fetches
// the connection and relays it.
func (rf *remoteForwards) carry(l *rlistener, in remote.Incoming) {
	s, cs := rf.s, rf.cs
	host, port := in.Origin()
	originator := net.JoinHostPort(safeText(host, 64), strconv.Itoa(port))
	f := &forward{s: s, cs: cs, name: l.name, target: l.shown, who: l.who}
	f.ctx, f.cancel = context.WithCancel(cs.ctx)
	defer f.cancel()
	op, why := s.beginRemote(cs, opForward, l.name, f.cut)
	if why != "" {
		in.Drop()
		s.cfg.Audit.Event(audit.Forward, l.who, l.name, "", "listen", l.shown, "originator", originator, "result", "denied", "reason", why)
		s.fwdStats.refused.Add(1)
		return
	}
	defer op.end()
	var typ string
	var payload []byte
	if l.path != "" {
		typ, payload = "forwarded-streamlocal@openssh.com", gossh.Marshal(forwardedStreamlocal{Path: l.path})
	} else {
		typ, payload = "forwarded-tcpip", gossh.Marshal(forwardedTCPIP{Addr: l.addr, Port: l.port, OrigAddr: host, OrigPort: uint32(port)})
	}
	ch, reqs, err := rf.sc.OpenChannel(typ, payload)
	if err != nil {
		in.Drop()
		s.fwdStats.failed.Add(1)
		s.cfg.Audit.Event(audit.Forward, l.who, l.name, "", "listen", l.shown, "originator", originator, "result", "failed", "reason", "the client refused the connection: "+safeText(err.Error(), 200))
		return
	}
	conn, why := f.connect(func(ctx context.Context, _ sessions.Instance) (remote.Conn, error) { return in.Fetch(ctx) })
	if why != "" {
		in.Drop()
		_ = ch.Close()
		s.track.Go(func() { gossh.DiscardRequests(reqs) })
		s.fwdStats.failed.Add(1)
		s.cfg.Audit.Event(audit.Forward, l.who, l.name, "", "listen", l.shown, "originator", originator, "result", "failed", "reason", why)
		return
	}
	if !f.accepted(ch, conn) {
		s.track.Go(func() { gossh.DiscardRequests(reqs) })
		s.cfg.Audit.Event(audit.Forward, l.who, l.name, "", "listen", l.shown, "originator", originator, "result", "failed", "reason", f.cutWhy())
		return
	}
	start := time.Now()
	r, cause := f.relay(ch, reqs, conn)
	cs.log.Debug("remote forward ended", "instance", l.name, "listen", l.shown, "cause", cause, "to_instance", r.toTarget, "from_instance", r.fromTarget)
	// Bytes named from the instance's side, as -L's: to_target is what
	// reached the connection in the instance.
	s.cfg.Audit.Event(audit.Forward, l.who, l.name, "", "listen", l.shown, "result", "ok",
		"originator", originator, "bytes_to_target", r.toTarget, "bytes_from_target", r.fromTarget,
		"duration_ms", time.Since(start).Milliseconds(), "cause", cause)
}

// cancel closes the listener key names; false when there is none.
func (rf *remoteForwards) cancel(key, why string) bool {
	rf.mu.Lock()
	l := rf.listeners[key]
	rf.mu.Unlock()
	if l == nil {
		return false
	}
	rf.close(l, why)
	return true
}

// close ends a registered listener (cancel, revocation, shutdown, its end).
func (rf *remoteForwards) close(l *rlistener, why string) {
	rf.mu.Lock()
	if rf.listeners[l.key] == l {
		delete(rf.listeners, l.key)
	}
	rf.mu.Unlock()
	rf.end(l, why)
}

// end closes the listener in the instance and releases its op, once.
func (rf *remoteForwards) end(l *rlistener, why string) {
	l.once.Do(func() {
		l.closeWhy = why
		l.cancel()
		if l.ln != nil {
			_ = l.ln.Close()
		}
		l.op.end()
		if l.key != "" {
			rf.cs.log.Info("remote forwarding (ssh -R) closed", "instance", l.name, "listen", l.shown, "reason", why)
			rf.s.cfg.Audit.Event(audit.Forward, l.who, l.name, "", "listen", l.shown, "result", "closed", "reason", why)
		}
	})
}

// closeAll ends every listener with the connection and waits for their
// loops and carried connections.
func (rf *remoteForwards) closeAll() {
	rf.mu.Lock()
	ls := rf.listeners
	rf.listeners = nil
	rf.mu.Unlock()
	for _, l := range ls {
		rf.end(l, "the connection ended")
	}
	rf.wg.Wait()
}
