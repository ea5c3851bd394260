package sshd

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

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
// changes, pumps the channel's data into a bounded inbox (see inbox.go),
// remembers the channel for raw writes and signals when the channel has
// closed.
//
// Every channel counts, from its open until it is gone, against the
// connection's MaxChannelsPerConn and the key's MaxSessionsPerKey, whether
// or not it ever starts anything; one over either cap is refused before it
// is accepted. A channel that asks for no shell or command within
// ChannelStartTimeout is closed.
func (s *Server) sessionChannel(srv *ssh.Server, conn *gossh.ServerConn, nc gossh.NewChannel, ctx ssh.Context) {
	s.track.add()
	defer s.track.done()
	cs := connStateOf(ctx)
	release, refused := s.channelSlot(cs)
	if refused != "" {
		if cs != nil { // Debug: a flood of opens must not flood the log; the client reads the reason
			cs.log.Debug("channel refused", "reason", refused)
		}
		_ = nc.Reject(gossh.ResourceShortage, refused)
		return
	}
	defer release()
	w := &newChannel{NewChannel: nc, s: s, cs: cs}
	// DefaultSessionHandler returns once the channel's requests end, that is
	// once the channel is closed on both sides or the connection is gone.
	ssh.DefaultSessionHandler(srv, conn, w, ctx)
	if w.ch != nil {
		close(w.ch.closed)
		w.ch.in.setDiscard() // nobody needs its data now; unblocks the pump
		w.ch.wg.Wait()       // the pumps end with the channel's reads
	}
}

// channelSlot takes a channel slot of the connection and a session slot of
// its key, or says why the channel is refused.
func (s *Server) channelSlot(cs *connState) (release func(), refused string) {
	if cs == nil { // outside Server (unit tests): no caps
		return func() {}, ""
	}
	key := cs.verifiedKey()
	if key == nil {
		return nil, "permission denied"
	}
	cs.mu.Lock()
	if max := s.cfg.MaxChannelsPerConn; max > 0 && cs.channels >= max {
		cs.mu.Unlock()
		return nil, fmt.Sprintf("termgate: at most %d sessions per connection; close one and try again", max)
	}
	cs.channels++
	cs.mu.Unlock()
	keyRelease, ok := s.lim.keySession(capKey(key))
	if !ok {
		cs.releaseChannel()
		return nil, fmt.Sprintf("termgate: this key already has %d sessions open; close one and try again", s.cfg.MaxSessionsPerKey)
	}
	return func() {
		keyRelease()
		cs.releaseChannel()
	}, ""
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
	c := &acceptedChannel{Channel: ch, closed: make(chan struct{}), winSig: make(chan struct{}, 1),
		in: newInbox(), started: make(chan struct{})}
	n.ch = c
	c.goTracked(&n.s.track, func() {
		c.in.pump(ch, func() {
			n.logf("closing a channel that sent more than %d bytes before asking for a shell or command", inboxSize)
			_ = ch.Close()
		})
	})
	// The client's stderr (extended data) is never read by termgate; left
	// in x/crypto it would hold up to the channel's window.
	c.goTracked(&n.s.track, func() { _, _ = io.Copy(io.Discard, ch.Stderr()) })
	c.goTracked(&n.s.track, func() { n.closeIfNotStarted(c) })
	out := make(chan *gossh.Request)
	n.s.track.Go(func() { n.filter(reqs, out) })
	return c, out, nil
}

// closeIfNotStarted closes the channel when it has not asked for a shell
// or a command within ChannelStartTimeout.
func (n *newChannel) closeIfNotStarted(c *acceptedChannel) {
	t := time.NewTimer(n.s.cfg.ChannelStartTimeout)
	defer t.Stop()
	select {
	case <-c.started:
	case <-c.closed:
	case <-t.C:
		if c.in.abandonUnstarted() {
			n.logf("closing a channel that asked for no shell or command within %v", n.s.cfg.ChannelStartTimeout)
			_ = c.Channel.Close()
		}
	}
}

func (n *newChannel) logf(format string, args ...any) {
	if n.cs != nil {
		n.cs.log.Info(fmt.Sprintf(format, args...))
	}
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
		if req.Type == "shell" || req.Type == "exec" {
			if !n.ch.in.start() { // closed already: starting nothing, or sending too much first
				_ = req.Reply(false, nil)
				continue
			}
			n.ch.startOnce.Do(func() { close(n.ch.started) })
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
// channel has closed. Reads come from the inbox; Close makes the inbox
// discard what still arrives.
type acceptedChannel struct {
	gossh.Channel
	closed    chan struct{}
	winSig    chan struct{} // signalled (buffer of one) after every window change
	in        *inbox
	started   chan struct{} // closed on the first shell or exec request
	startOnce sync.Once
	wg        sync.WaitGroup // the pumps and the start timer

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

// goTracked runs f in a goroutine that both the server's tracker and the
// channel's WaitGroup wait for.
func (c *acceptedChannel) goTracked(t *tracker, f func()) {
	c.wg.Add(1)
	t.Go(func() {
		defer c.wg.Done()
		f()
	})
}

// Read reads the client's data from the inbox.
func (c *acceptedChannel) Read(p []byte) (int, error) { return c.in.Read(p) }

// Close closes the channel; data still arriving is discarded.
func (c *acceptedChannel) Close() error {
	c.in.setDiscard()
	return c.Channel.Close()
}

// discardInput is for sessions that never read their input (reset, list,
// help): the client's data is dropped as it arrives.
func (c *acceptedChannel) discardInput() { c.in.setDiscard() }

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
