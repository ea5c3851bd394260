package holder

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// connQueue bounds what may wait for one gateway: past it the gateway is
// too slow and is dropped (it reattaches with its offset).
const connQueue = 8 << 20

// Flow control. A holder reads its terminal as fast as the shell writes,
// but a gateway reaches it through an exec stream that is often slower
// (the engine relays it, on a busy machine at a few MB/s): without a brake
// a burst of output (a build log, a cat of a big file) fills connQueue and
// every client of the session is cut off. So the pump stops reading the
// terminal while a gateway has more than connHigh waiting, as the engine's
// own TTY relay does with its reader: the shell blocks in write, nothing
// is lost. A gateway that takes nothing for connStall is stuck (stopped,
// or its host frozen) and is dropped, so it can hold the shell back no
// longer than that; it reattaches from its offset.
const connHigh = 1 << 20

var connStall = 10 * time.Second // a variable for tests

// conn is one gateway's connection (through an exec bridge). A reader
// goroutine handles its frames; a writer goroutine drains its queue.
type conn struct {
	h  *holder
	nc net.Conn // the attach process's socket
	// out carries the frames to the gateway: nc, or the exec's stdout
	// when the attach process passed the exec's stdin and stdout (passed;
	// see attach.go and first).
	out    io.Writer
	passed []*os.File

	clients int // this gateway's clients on the session; guarded by h.mu

	// The key proof (proof.go), used by serve's goroutine only: the
	// nonces of this connection, whether the gateway proved it has the
	// key, and the clients its hello said, which count once it did.
	nonce, peerNonce string
	proven           bool
	helloClients     int

	mu       sync.Mutex
	queue    [][]byte
	queued   int
	closing  bool // close once the queue is drained
	closed   bool
	attached bool // output flows only after the Attach's replay
	wake     chan struct{}
	took     chan struct{} // the writer took the queue (flow control waits on it)
}

func newConn(h *holder, nc net.Conn) *conn {
	return &conn{h: h, nc: nc, out: nc, wake: make(chan struct{}, 1), took: make(chan struct{}, 1)}
}

// close ends the connection: the passed stream first, so that the attach
// process, which exits when the socket closes, is the last to hold it.
// Closing interrupts a read or write in progress (the passed files are on
// the runtime's poller); it may be called more than once.
func (c *conn) close() {
	for _, f := range c.passed {
		_ = f.Close()
	}
	_ = c.nc.Close()
}

// behind reports whether more than connHigh waits for this gateway.
func (c *conn) behind() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed && c.queued > connHigh
}

// drop cuts a gateway that is stuck; it reattaches with its offset.
func (c *conn) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.queue, c.queued = nil, 0
	c.close()
}

// send queues a frame without blocking; called with h.mu held.
func (c *conn) send(frame []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.closing {
		return
	}
	if !c.attached && !beforeAttach(frame[0]) {
		return
	}
	if c.queued+len(frame) > connQueue {
		c.closed = true
		c.queue, c.queued = nil, 0
		c.close()
		return
	}
	c.queue = append(c.queue, frame)
	c.queued += len(frame)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// beforeAttach says whether a frame of type typ may go to a gateway that
// has not attached (and so not yet proved it has the key): its hello, a
// refusal and the session's end, nothing about the session.
func beforeAttach(typ byte) bool {
	return typ == TypeHello || typ == TypeError || typ == TypeExit
}

func (c *conn) closeAfterQueue() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// serve runs the connection: hello, then frames until either side ends.
func (c *conn) serve() {
	defer c.close()
	var wg sync.WaitGroup
	defer wg.Wait()
	f, r, err := c.first(&wg)
	wg.Go(c.writer)
	defer c.shut()
	if err != nil {
		return
	}
	peer, err := checkHello(f, c.h.cfg.Proto)
	if err == nil && !validNonce(peer.Nonce) {
		err = fmt.Errorf("holder protocol: a hello without a valid nonce")
	}
	if err != nil {
		c.h.log.Warn("gateway refused", "err", err)
		c.reply(TypeError, ErrorMsg{Message: err.Error(), Proto: c.h.cfg.Proto})
		c.closeAfterQueue()
		return
	}
	c.nonce, c.peerNonce = newNonce(), peer.Nonce
	c.h.mu.Lock()
	hello := HelloMsg{Proto: c.h.cfg.Proto, Build: c.h.cfg.Build, Session: c.h.session, Offset: c.h.ring.End(),
		Cols: c.h.cols, Rows: c.h.rows, Created: c.h.created.UnixMilli(), Login: c.h.cfg.Login,
		Nonce: c.nonce, Proof: HolderProof(c.h.cfg.Key, c.peerNonce, c.nonce)}
	if c.h.shell != nil {
		hello.PID = c.h.shell.cmd.Process.Pid
	}
	if c.h.ended {
		c.h.mu.Unlock()
		return
	}
	c.h.conns[c] = struct{}{}
	if peer.Clients > 0 && peer.Clients <= 1<<20 {
		c.helloClients = peer.Clients // counted once the gateway proved it has the key
	}
	c.h.mu.Unlock()
	c.reply(TypeHello, hello)
	stream := "socket"
	if c.passed != nil {
		stream = "passed"
	}
	for {
		f, err := r.ReadFrame()
		if err != nil {
			return
		}
		if !c.proven && !c.prove(f, peer.Gateway, stream) {
			return
		}
		if err := c.handle(f); err != nil {
			c.reply(TypeError, ErrorMsg{Message: err.Error()})
		}
	}
}

// prove checks the gateway's first frame after the hellos: an attach with
// the proof that the gateway has this holder's key (proof.go). Until then
// the holder takes nothing from it (no input, resize, client count, reset
// or end) and counts none of its clients; a gateway that sends anything
// else, or a wrong proof, is told so and the connection closes. On success
// the hello's clients count from now on.
func (c *conn) prove(f Frame, gateway, stream string) bool {
	var m AttachMsg
	if f.Type != TypeAttach || DecodeControl(f, &m) != nil ||
		!proofOK(m.Proof, gatewayProof(c.h.cfg.Key, c.peerNonce, c.nonce)) {
		c.h.log.Warn("refused a gateway without this holder's key (another deployment's, or a fake)",
			"gateway", clip(gateway), "frame", string(f.Type))
		c.reply(TypeError, ErrorMsg{Message: errNotOurs})
		c.closeAfterQueue()
		return false
	}
	c.proven = true
	c.h.mu.Lock()
	c.clients = c.helloClients
	c.h.armIdleLocked()
	c.h.mu.Unlock()
	c.h.log.Info("gateway attached", "gateway", clip(gateway), "stream", stream)
	return true
}

func (c *conn) reply(typ byte, msg any) {
	frame, err := ControlFrame(typ, msg)
	if err != nil {
		return
	}
	c.h.mu.Lock()
	c.send(frame)
	c.h.mu.Unlock()
}

// shut removes the connection; its clients no longer count.
func (c *conn) shut() {
	c.h.mu.Lock()
	delete(c.h.conns, c)
	c.h.armIdleLocked()
	c.h.mu.Unlock()
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) writer() {
	for {
		c.mu.Lock()
		q, closing, closed := c.queue, c.closing, c.closed
		c.queue, c.queued = nil, 0
		c.mu.Unlock()
		select {
		case c.took <- struct{}{}:
		default:
		}
		for _, frame := range q {
			if _, err := c.out.Write(frame); err != nil {
				c.close()
				return
			}
		}
		if closed || (closing && len(q) == 0) {
			c.close()
			return
		}
		if len(q) > 0 {
			continue
		}
		<-c.wake
	}
}
