package sshd

import (
	"io"
	"strings"
	"sync"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// Requests on a session channel that are refused before gliderlabs sees
// them: gliderlabs acknowledges agent forwarding (without forwarding), and
// would look subsystems up in an empty table; refusing here says so to the
// client and keeps the whole policy in one place. env requests are judged
// by envAllowed.
var refusedRequests = map[string]string{
	"auth-agent-req@openssh.com": "agent forwarding",
	"x11-req":                    "X11 forwarding",
	"subsystem":                  "subsystem",
}

// sessionChannel is the "session" channel handler: gliderlabs' own, given
// a channel wrapper that filters the channel's requests, takes the window
// changes, remembers the channel for raw writes and signals when the
// channel has closed.
func (s *Server) sessionChannel(srv *ssh.Server, conn *gossh.ServerConn, nc gossh.NewChannel, ctx ssh.Context) {
	s.track.add()
	defer s.track.done()
	cs := connStateOf(ctx)
	w := &newChannel{NewChannel: nc, s: s, cs: cs}
	// DefaultSessionHandler returns once the channel's requests end, that is
	// once the channel is closed on both sides or the connection is gone.
	ssh.DefaultSessionHandler(srv, conn, w, ctx)
	if w.ch != nil {
		close(w.ch.closed)
	}
}

type newChannel struct {
	gossh.NewChannel
	s  *Server
	cs *connState
	ch *acceptedChannel // set by Accept
}

func (n *newChannel) Accept() (gossh.Channel, <-chan *gossh.Request, error) {
	ch, reqs, err := n.NewChannel.Accept()
	if err != nil {
		return nil, nil, err
	}
	n.ch = &acceptedChannel{Channel: ch, closed: make(chan struct{}), winSig: make(chan struct{}, 1)}
	out := make(chan *gossh.Request)
	n.s.track.Go(func() { n.filter(reqs, out) })
	return n.ch, out, nil
}

// filter forwards the channel's requests in order, refusing the ones in
// refusedRequests and keeping window changes for itself; it ends when the
// channel's requests end.
//
// gliderlabs queues window changes in a channel of one and blocks the
// channel's request loop while it is full; before the handler runs nobody
// can drain it, so two changes sent before the shell request would wedge
// the channel. Here a change only replaces the latest size.
func (n *newChannel) filter(in <-chan *gossh.Request, out chan<- *gossh.Request) {
	defer close(out)
	for req := range in {
		if req.Type == "window-change" {
			_ = req.Reply(n.ch.windowChanged(req.Payload), nil)
			continue
		}
		if req.Type == "env" {
			ok := envAllowed(req.Payload)
			if !ok && n.cs != nil {
				n.cs.log.Debug("refused an environment variable", "request", req.Type)
			}
			_ = req.Reply(ok, nil)
			continue
		}
		if what, refused := refusedRequests[req.Type]; refused {
			if n.cs != nil {
				n.cs.log.Debug("refused a session request", "request", req.Type, "what", what)
			}
			_ = req.Reply(false, nil)
			continue
		}
		out <- req
	}
}

// envAllowed reports whether an env request (RFC 4254 6.4) names TERM,
// LANG or LC_*, the only variables a client may send. Accepted ones are
// acknowledged and dropped: the shell's environment is the instance's own
// (a new session gets TERM from the PTY request; sessions.AttachOptions
// carries nothing else), so nothing a client sends reaches a shell. They are
// not handed to gliderlabs either, which would keep every one in memory.
func envAllowed(payload []byte) bool {
	var kv struct{ Name, Value string }
	if err := gossh.Unmarshal(payload, &kv); err != nil {
		return false
	}
	if kv.Name == "TERM" || kv.Name == "LANG" {
		return true
	}
	rest, ok := strings.CutPrefix(kv.Name, "LC_")
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// acceptedChannel is an accepted session channel. closed is closed once the
// channel has closed.
type acceptedChannel struct {
	gossh.Channel
	closed chan struct{}
	winSig chan struct{} // signalled (buffer of one) after every window change

	mu  sync.Mutex  // guards win
	win *ssh.Window // the latest window change; nil before the first
}

// windowChanged records a window-change request (RFC 4254 6.7) and reports
// whether it parsed.
func (c *acceptedChannel) windowChanged(payload []byte) bool {
	var m struct{ Cols, Rows, WidthPx, HeightPx uint32 }
	if err := gossh.Unmarshal(payload, &m); err != nil || m.Cols > 1<<24 || m.Rows > 1<<24 {
		return false
	}
	c.mu.Lock()
	c.win = &ssh.Window{Width: int(m.Cols), Height: int(m.Rows)}
	c.mu.Unlock()
	select {
	case c.winSig <- struct{}{}:
	default:
	}
	return true
}

// window returns the latest window change, if any.
func (c *acceptedChannel) window() (ssh.Window, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.win == nil {
		return ssh.Window{}, false
	}
	return *c.win, true
}

// Stderr returns the channel's stderr with a way back to the channel:
// ssh.Session embeds its gossh.Channel in an unexported struct and shadows
// Write (it turns "\n" into "\r\n" once a PTY was requested), so Stderr,
// which it does not shadow, is the one route from a Session to its raw
// channel (see rawOf).
func (c *acceptedChannel) Stderr() io.ReadWriter {
	return rawStderr{ReadWriter: c.Channel.Stderr(), ch: c}
}

type rawStderr struct {
	io.ReadWriter
	ch *acceptedChannel
}

// rawOf returns the accepted channel under a session, or nil.
func rawOf(s ssh.Session) *acceptedChannel {
	if r, ok := s.Stderr().(rawStderr); ok {
		return r.ch
	}
	return nil
}

// rejectChannel refuses every channel type but "session": port forwarding
// (direct-tcpip), agent and X11 channels, anything else.
func rejectChannel(_ *ssh.Server, _ *gossh.ServerConn, nc gossh.NewChannel, ctx ssh.Context) {
	if cs := connStateOf(ctx); cs != nil {
		cs.log.Debug("refused a channel", "type", nc.ChannelType())
	}
	_ = nc.Reject(gossh.Prohibited, "termgate allows terminal sessions only (no port forwarding)")
}
