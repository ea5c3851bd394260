package websock

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/relaybuf"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// closeGrace is how long a closing connection waits for the peer's close
// reply (or, after an oversized message, for the peer to hang up) before the
// TCP connection is closed.
const closeGrace = 2 * time.Second

// conn is one upgraded WebSocket connection. Goroutines: the handler's,
// which runs the read loop and tears down; writeLoop, the only goroutine
// that writes data frames, which takes the session's output from the client
// itself (sessions moves the client on a reset; the writer reports it);
// inputLoop, which writes input to the shell;
// at most one at a time that runs control resets (runResets); and, only
// once a client is closed, watchCut's callback.
// The read loop and inputLoop hand frames to the writer through out; the
// read loop hands input to inputLoop through in.ch.
type conn struct {
	s     *Server
	ws    *websocket.Conn
	name  string // the session's address: the instance, or INSTANCE+NAME
	label string // names the client in sessions' logs
	// allowed is the attach's Allowed: every control reset checks it
	// again (sessions checks it when a reset moves the client).
	allowed  func(instance string) error
	readOnly bool        // an observer: input and resets are refused here, input again by sessions
	toldRO   atomic.Bool // the observer got its one error event about input
	by       string      // names the caller in reset notices
	who      audit.Who
	log      *slog.Logger
	ctx      context.Context // ends with the connection
	cancel   context.CancelFunc

	out        chan frame
	endOnce    sync.Once
	ending     chan struct{} // closed by the first end
	final      *frame        // written by end before ending is closed
	closeCode  int           // likewise; 0 means leave without a close frame
	writerDone chan struct{}
	binary     binaryWriter   // writes output frames for relaybuf
	behind     behindWatch    // the writer's watch on slow output writes (behind.go)
	cutWG      sync.WaitGroup // watchCut's callbacks
	watchDone  chan struct{}  // closed when watchClients returns (or at once without wantClients)
	// wantClients: the client asked for clients events (?clients=1).
	wantClients bool
	readerDone  chan struct{}
	in          inputState
	hurry       atomic.Bool    // set by endNow
	forward     bool           // brought forward when behind (--replay screen): writes wait for liveness (stall.go); set by run
	caller      caller         // who attached: the reset limits count per token
	resetWG     sync.WaitGroup // runResets

	mu     sync.Mutex       // guards client, told, moved, cause, resetRunning and resetPending
	client *sessions.Client // the attach; nil once stopClient detached it
	told   *sessions.Client // the attach once the client was told of it (attached event): watchClients follows it
	moved  chan struct{}    // closed (and replaced) when the client was told of a reset
	// toldSession is the session the client was last told of (attached
	// or reset event).
	toldSession string
	cause       error // why the server ended the connection (first wins); nil: the peer or the network did
	// resetRunning is set while runResets runs; resetPending when a reset
	// waits for it (dropped when the connection ends).
	resetRunning, resetPending bool
}

func newConn(s *Server, parent context.Context, ws *websocket.Conn, name, by string, opts sessions.AttachOptions, log *slog.Logger) *conn {
	ctx, cancel := context.WithCancel(parent)
	c := &conn{
		binary: binaryWriter{ws: ws},
		s:      s, ws: ws, name: name, label: opts.Label, allowed: opts.Allowed, by: by, log: log,
		ctx: ctx, cancel: cancel, readOnly: opts.ReadOnly,
		out:        make(chan frame, 16),
		ending:     make(chan struct{}),
		writerDone: make(chan struct{}),
		watchDone:  make(chan struct{}),
		moved:      make(chan struct{}),
		readerDone: make(chan struct{}),
		in:         newInputState(),
	}
	c.behind.c = c
	return c
}

// run serves the connection until it ends and every goroutine it started
// has returned. client is the attach made before the upgrade.
func (c *conn) run(client *sessions.Client) {
	defer c.cancel()
	info := client.Info()
	c.mu.Lock()
	c.client, c.told, c.toldSession = client, client, info.Session
	c.mu.Unlock()
	c.forward = client.BroughtForward()
	limitUnsent(c.ws.NetConn()) // a slow reader's writes go on as it reads (lowat.go)
	attached := time.Now()
	sessions.LogAttached(c.log, c.name, info, c.readOnly)
	c.log.Debug("websocket attached", "instance", c.name, "offset", info.Offset, "gap", info.Gap)
	inst, detail := sessions.AuditAddr(c.name, "new", info.New, "client", c.label, "read_only", c.readOnly)
	c.s.cfg.Audit.Event(audit.Attach, c.who, inst, info.Session, detail...)
	// out is empty and nobody else sends yet: the attached event goes first.
	c.out <- eventFrame(attachedEvent{Type: "attached", Instance: info.Instance, Session: info.Session, New: info.New, Offset: info.Offset, Gap: info.Gap, Replay: info.Replay, ReadOnly: c.readOnly, Cols: info.Size.Cols, Rows: info.Size.Rows})

	c.watchCut(client)
	go c.writeLoop()
	go c.inputLoop()
	if c.wantClients {
		go c.watchClients()
	} else {
		close(c.watchDone)
	}
	err := c.readLoop()
	c.readEnded(err)         // a silent peer is dropped here (stall.go)
	released(c.ws.NetConn()) // the client is gone, or about to be: it no longer counts
	close(c.readerDone)
	close(c.in.ch)
	// A reset that was running when the client left finishes (it has begun
	// killing the shell); the one waiting for it is dropped.
	c.mu.Lock()
	c.resetPending = false
	c.mu.Unlock()
	c.resetWG.Wait()

	c.end(nil, 0) // no-op when the connection is already ending
	c.cancel()
	session := client.Info().Session // the session a reset moved it to, if any
	c.stopClient()                   // also ends a Write inputLoop is blocked in
	<-c.in.done
	<-c.writerDone
	c.behind.wg.Wait() // a fellBehind that fired as the write ended
	c.cutWG.Wait()     // the client is closed: its callback has run or runs now
	<-c.watchDone      // it stops on ctx or when the writer is gone
	_ = c.ws.Close()
	// What ended it: the server's reason when it had one (revoked, too
	// slow, shell exited...), else what the read loop saw.
	reason := err.Error()
	if cause := c.getCause(); cause != nil {
		reason = cause.Error()
	}
	inst, detail = sessions.AuditAddr(c.name, "client", c.label, "reason", reason)
	c.s.cfg.Audit.Event(audit.Detach, c.who, inst, session, detail...)
	c.log.Debug("websocket closed", "instance", c.name, "reason", reason)
	// A tab closed or a page left: the usual end, said by no cause.
	if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) && c.getCause() == nil {
		reason = ""
	}
	sessions.LogDetached(c.log, c.name, session, time.Since(attached), client.Taken(), reason)
}

// end asks the writer to finish: write what is queued, then final (if
// any), then a close frame with code, and wait for the peer's close reply.
// With code 0 the writer just stops. The first call wins.
func (c *conn) end(final *frame, code int) {
	c.endOnce.Do(func() {
		c.final, c.closeCode = final, code
		close(c.ending)
	})
}

// endNow is end for a client that may not be reading: the writer skips
// the frames still queued, and every write, the one in flight included, gets
// closeGrace instead of WriteTimeout.
func (c *conn) endNow(final *frame, code int) {
	c.hurry.Store(true)
	c.end(final, code)
	_ = c.ws.NetConn().SetWriteDeadline(time.Now().Add(closeGrace))
}

// kill closes the network connection at once (Shutdown's last resort).
func (c *conn) kill() { _ = c.ws.Close() }

// refuse tells a client that was upgraded while the server shut down, and
// closes. Nothing else writes to ws yet.
func (c *conn) refuse(client *sessions.Client, msg string) {
	defer c.cancel()
	client.Detach()
	if err := c.write(websocket.TextMessage, errorFrame(msg).data); err == nil {
		_ = c.writeClose(websocket.CloseGoingAway)
	}
	_ = c.ws.Close()
}

// send hands a frame to the writer; false when the writer has stopped.
func (c *conn) send(f frame) bool {
	select {
	case c.out <- f:
		return true
	case <-c.writerDone:
		return false
	}
}

// setCause records why the server ends the connection; the first cause
// wins.
func (c *conn) setCause(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause == nil {
		c.cause = err
	}
}

func (c *conn) getCause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

func (c *conn) current() *sessions.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

// stopClient detaches the client.
func (c *conn) stopClient() {
	c.mu.Lock()
	cl := c.client
	c.client = nil
	c.mu.Unlock()
	if cl != nil {
		cl.Detach()
	}
}

// writeLoop is the connection's only writer of data frames: the frames
// handed to it through out, and the session's output, which it takes from
// the client itself (no goroutine in between) and writes as one frame per
// wake-up, however many chunks were queued. It reports resets.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	ping := time.NewTicker(c.s.cfg.PingInterval)
	defer ping.Stop()
	cl := c.current()
	var bufs [][]byte
	// The attached event was queued before the writer started: it goes
	// before the replay.
	for n := len(c.out); n > 0; n-- {
		f := <-c.out
		if err := c.write(f.typ, f.data); err != nil {
			c.writeFailed(err)
			return
		}
	}
	for {
		select { // an end goes before queued frames
		case <-c.ending:
			c.closeGracefully()
			return
		default:
		}
		var ready <-chan struct{}
		if cl != nil {
			ready = cl.Ready()
		}
		select {
		case f := <-c.out:
			if err := c.write(f.typ, f.data); err != nil {
				c.writeFailed(err)
				return
			}
		case <-ready:
			var ev sessions.Event
			var err error
			bufs, ev, err = cl.Take(bufs[:0])
			if len(bufs) > 0 {
				werr := c.writeOutput(bufs)
				clear(bufs) // hold no output once it is written
				if werr != nil {
					c.writeFailed(werr)
					return
				}
			}
			switch {
			case ev != nil: // in band: cl goes on (inband.go)
				if werr := ev.Handle((*connEvents)(c)); werr != nil {
					c.writeFailed(werr)
					cl = nil
				}
			case err != nil:
				c.outputEnded(err)
				cl = nil
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.writeTimeout())); err != nil {
				c.writeFailed(err)
				return
			}
		case <-c.ending:
			c.closeGracefully()
			return
		}
	}
}

// writeOutput writes the chunks as one binary frame (several frames only
// past relaybuf.MaxWrite). With --replay raw, a client that does not take
// them within the write timeout has fallen behind (behind.go): the write
// gets behindGrace more, so that the client may still take it and then
// learn why it is dropped. With --replay screen the write waits up to the
// liveness timeout (writeTimeout; stall.go): meanwhile the session brings
// the client forward, and it gets the current screen once it reads again.
func (c *conn) writeOutput(bufs [][]byte) error {
	timeout := c.writeTimeout()
	if c.hurry.Load() || c.forward {
		if err := c.ws.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
			return err
		}
		return relaybuf.Write(c.binary, bufs)
	}
	if err := c.ws.SetWriteDeadline(time.Now().Add(timeout + behindGrace)); err != nil {
		return err
	}
	stop := c.behind.start(timeout)
	defer stop()
	return relaybuf.Write(c.binary, bufs)
}

// binaryWriter writes each Write as one binary message.
type binaryWriter struct{ ws *websocket.Conn }

func (w binaryWriter) Write(p []byte) (int, error) {
	if err := w.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// closeGracefully writes what end asked for and waits for the read loop to
// see the peer's close reply, at most closeGrace.
func (c *conn) closeGracefully() {
	if c.closeCode == 0 {
		return
	}
	for n := len(c.out); n > 0 && !c.hurry.Load(); n-- { // what was queued before end, not more
		f := <-c.out
		if err := c.write(f.typ, f.data); err != nil {
			c.writeFailed(err)
			return
		}
	}
	if c.final != nil {
		if err := c.write(c.final.typ, c.final.data); err != nil {
			c.writeFailed(err)
			return
		}
	}
	if err := c.writeClose(c.closeCode); err != nil {
		c.writeFailed(err)
		return
	}
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-c.readerDone:
	case <-t.C:
		c.log.Debug("no close reply from the peer")
		_ = c.ws.Close()
	}
}

func (c *conn) write(typ int, data []byte) error {
	if err := c.ws.SetWriteDeadline(time.Now().Add(c.writeTimeout())); err != nil {
		return err
	}
	return c.ws.WriteMessage(typ, data)
}

func (c *conn) writeClose(code int) error {
	return c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, closeReason(code)), time.Now().Add(c.writeTimeout()))
}

// writeTimeout bounds the next write: closeGrace once the connection
// ends in a hurry, the liveness timeout for a client that is brought
// forward when it falls behind (stall.go), else WriteTimeout.
func (c *conn) writeTimeout() time.Duration {
	switch {
	case c.hurry.Load():
		return closeGrace
	case c.forward:
		return c.s.cfg.PongTimeout
	}
	return c.s.cfg.WriteTimeout
}

// writeFailed closes the network connection, which ends the read loop.
func (c *conn) writeFailed(err error) {
	c.log.Debug("websocket write failed", "err", err)
	_ = c.ws.Close()
}

// readLoop reads client messages until the connection fails or closes.
func (c *conn) readLoop() error {
	c.ws.SetReadLimit(maxMessage)
	extend := func() { _ = c.ws.SetReadDeadline(time.Now().Add(c.s.cfg.PongTimeout)) }
	extend()
	c.ws.SetPongHandler(func(string) error { extend(); return nil })
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				c.linger() // gorilla has sent the 1009 close frame
			}
			return err
		}
		extend()
		switch typ {
		case websocket.BinaryMessage:
			c.input(data)
		case websocket.TextMessage:
			c.control(data)
		}
	}
}

// linger discards what the peer still sends, until it hangs up or for
// closeGrace: closing with unread data would reset the TCP connection and
// could destroy the close frame before the peer reads it.
func (c *conn) linger() {
	nc := c.ws.NetConn()
	if err := nc.SetReadDeadline(time.Now().Add(closeGrace)); err == nil {
		_, _ = io.Copy(io.Discard, nc)
	}
}

// control applies a control message; a refused one gets an error event and
// changes nothing.
func (c *conn) control(data []byte) {
	ctl, err := parseControl(data)
	if err != nil {
		c.send(*errorFrame(err.Error()))
		return
	}
	switch ctl.Type {
	case ctlResize:
		if cl := c.current(); cl != nil {
			if err := cl.Resize(ctl.Size); err != nil {
				c.send(*errorFrame(err.Error()))
			}
		}
	case ctlReset:
		// A connection whose token was revoked resets nothing, even before
		// the reload's Recheck has closed it.
		if c.revokedNow() {
			return
		}
		if c.refused(keys.Reset, audit.Reset, "", "client", c.label) { // before the rate limit: an observer spends no one's resets
			return
		}
		c.startReset()
	case ctlPinSize:
		c.pinSize(ctl.Size)
	case ctlHand:
		c.raiseHand()
	case ctlGrant:
		c.grant(ctl.Who)
	}
}

// startReset runs a control reset beside the read loop, so that the read
// loop keeps reading the socket and notices at once when the client leaves
// (issue 9 item 11a: about 1,067 queued resets ran over 100 s after their
// clients had left). One reset runs at a time per connection, and one more
// may wait for it (a client that resets again as soon as it sees the reset
// event may be quicker than the goroutine's return); a third is refused.
// The waiting one is dropped when the connection ends. Every reset is
// rate-limited per instance and per token when it is asked for (the limits
// POST shares).
func (c *conn) startReset() {
	c.mu.Lock()
	busy := c.resetRunning && c.resetPending
	c.mu.Unlock()
	if busy {
		c.send(*errorFrame("a reset of this session is already in progress: wait for its reset event"))
		return
	}
	if err := c.s.allowReset(instanceOf(c.name), c.caller); err != nil {
		c.log.Warn("reset refused: rate limit", "instance", c.name)
		c.send(*errorFrame(err.Error()))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resetRunning {
		c.resetPending = true
		return
	}
	c.resetRunning = true
	c.resetWG.Add(1)
	go c.runResets()
}

// runResets runs a reset, then the one that waited for it, if any.
func (c *conn) runResets() {
	defer c.resetWG.Done()
	for {
		c.reset()
		c.mu.Lock()
		if !c.resetPending {
			c.resetRunning = false
			c.mu.Unlock()
			return
		}
		c.resetPending = false
		c.mu.Unlock()
	}
}

// reset resets the session; sessions moves the attach to the fresh
// session, and the writer sends the reset event.
func (c *conn) reset() {
	sess, err := c.s.cfg.Registry.Reset(c.ctx, c.name, c.by)
	if err != nil {
		_, msg := c.s.attachFailure(c.ctx, c.name, err)
		c.send(*errorFrame("reset failed: " + msg))
		return
	}
	inst, detail := sessions.AuditAddr(c.name, "client", c.label)
	c.s.cfg.Audit.Event(audit.Reset, c.who, inst, sess.ID(), detail...)
}

// outputEnded handles the end of the client's output: err is its cause.
// A cut (too slow, revoked) is handled by watchCut, which may have run
// already.
func (c *conn) outputEnded(err error) {
	var exit *sessions.ExitError
	switch {
	case errors.Is(err, sessions.ErrDetached), cut(err):
	case errors.As(err, &exit):
		c.log.Debug("shell exited", "code", exit.Code) // the detached line says so
		c.setCause(err)
		f := eventFrame(exitEvent{Type: "exit", Code: exit.Code})
		c.end(&f, websocket.CloseNormalClosure)
	case errors.Is(err, sessions.ErrShutdown):
		c.setCause(err)
		c.end(errorFrame(err.Error()), websocket.CloseGoingAway)
	case errors.Is(err, sessions.ErrRestart): // see restart.go
		c.setCause(err)
		c.end(errorFrame(err.Error()), websocket.CloseServiceRestart)
	default:
		c.log.Debug("session ended under the client", "cause", err.Error()) // the detached line says so
		c.setCause(err)
		c.end(errorFrame(err.Error()), websocket.CloseNormalClosure)
	}
}

// watchCut tells the client at once when the session cuts cl (too slow,
// revoked), even while the writer is blocked in a write to a client that
// does not read: endNow shortens that write's deadline. The callback runs
// only when cl closes; run waits for it.
func (c *conn) watchCut(cl *sessions.Client) {
	c.cutWG.Add(1)
	cl.AfterClose(func() {
		defer c.cutWG.Done()
		err := cl.Cause()
		var revoked *sessions.RevokedError
		switch {
		case errors.Is(err, sessions.ErrSlowClient):
			c.tooSlow(err)
		case errors.As(err, &revoked):
			c.revoked(revoked)
		}
	})
}

// revoked ends a connection whose credentials no longer allow its
// instance: an error event that says so, then a close (1008, policy
// violation), without the output still queued for it. The log and the
// audit trail get the reason.
func (c *conn) revoked(err *sessions.RevokedError) {
	c.log.Info("websocket disconnected: access revoked", "instance", c.name, "reason", err.Reason)
	c.setCause(err)
	c.endNow(errorFrame(err.Error()), websocket.ClosePolicyViolation)
}

// tooSlow ends a connection the session dropped for falling too far
// behind its output (sessions.ErrSlowClient): the client gets the error
// event and a close (1013, try again later) if its connection takes the
// frame in flight within behindGrace, and is closed either way; the output still queued for
// it is dropped (a reattach gets the replay). The detach is logged and
// audited as what it was, not as the network error that follows.
func (c *conn) tooSlow(err error) {
	c.log.Info("websocket client fell too far behind the output; disconnecting", "instance", c.name)
	c.setCause(err)
	c.endBehind() // behind.go
}

// cut reports causes that end an attach without its queued output.
func cut(err error) bool {
	var revoked *sessions.RevokedError
	return errors.Is(err, sessions.ErrSlowClient) || errors.As(err, &revoked)
}

// refused makes the connection's access decision (the caller's
// keys.Access, decided at the upgrade) for act: a refusal is logged,
// audited as auditAction on session (with extra) and sent as an error
// event.
func (c *conn) refused(act keys.Action, auditAction, session string, extra ...any) bool {
	r := c.caller.access.Decide(act)
	if r == nil {
		return false
	}
	c.log.Warn("refused", "action", act.String(), "instance", c.name, "reason", r.Reason)
	inst, detail := sessions.AuditAddr(c.name, append(extra, "result", "denied", "reason", r.Reason)...)
	c.s.cfg.Audit.Event(auditAction, c.who, inst, session, detail...)
	c.send(*errorFrame(r.Message))
	return true
}
