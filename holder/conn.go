package holder

import (
	"bufio"
	"net"
	"sync"
)

// connQueue bounds what may wait for one gateway: past it the gateway is
// too slow and is dropped (it reattaches with its offset).
const connQueue = 8 << 20

// conn is one gateway's connection (through an exec bridge). A reader
// goroutine handles its frames; a writer goroutine drains its queue.
type conn struct {
	h  *holder
	nc net.Conn

	clients int // this gateway's clients on the session; guarded by h.mu

	mu       sync.Mutex
	queue    [][]byte
	queued   int
	closing  bool // close once the queue is drained
	closed   bool
	attached bool // output flows only after the Attach's replay
	wake     chan struct{}
}

func newConn(h *holder, nc net.Conn) *conn {
	return &conn{h: h, nc: nc, wake: make(chan struct{}, 1)}
}

// send queues a frame without blocking; called with h.mu held.
func (c *conn) send(frame []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.closing {
		return
	}
	if frame[0] == TypeOutput && !c.attached {
		return
	}
	if c.queued+len(frame) > connQueue {
		c.closed = true
		c.queue, c.queued = nil, 0
		c.nc.Close()
		return
	}
	c.queue = append(c.queue, frame)
	c.queued += len(frame)
	select {
	case c.wake <- struct{}{}:
	default:
	}
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
	defer c.nc.Close()
	var wg sync.WaitGroup
	wg.Go(c.writer)
	defer wg.Wait()
	defer c.shut()
	r := NewReader(bufio.NewReader(c.nc))
	f, err := r.ReadFrame()
	if err != nil {
		return
	}
	peer, err := checkHello(f, c.h.cfg.Proto)
	if err != nil {
		c.h.log.Warn("gateway refused", "err", err)
		c.reply(TypeError, ErrorMsg{Message: err.Error(), Proto: c.h.cfg.Proto})
		c.closeAfterQueue()
		return
	}
	c.h.mu.Lock()
	hello := HelloMsg{Proto: c.h.cfg.Proto, Build: c.h.cfg.Build, Session: c.h.session, Offset: c.h.ring.End(),
		Cols: c.h.cols, Rows: c.h.rows, Created: c.h.created.UnixMilli()}
	if c.h.shell != nil {
		hello.PID = c.h.shell.cmd.Process.Pid
	}
	if c.h.ended {
		c.h.mu.Unlock()
		return
	}
	c.h.conns[c] = struct{}{}
	if peer.Clients > 0 && peer.Clients <= 1<<20 {
		c.clients = peer.Clients
		c.h.armIdleLocked()
	}
	c.h.mu.Unlock()
	c.reply(TypeHello, hello)
	c.h.log.Info("gateway attached", "gateway", peer.Gateway)
	for {
		f, err := r.ReadFrame()
		if err != nil {
			return
		}
		if err := c.handle(f); err != nil {
			c.reply(TypeError, ErrorMsg{Message: err.Error()})
		}
	}
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
		for _, frame := range q {
			if _, err := c.nc.Write(frame); err != nil {
				c.nc.Close()
				return
			}
		}
		if closed || (closing && len(q) == 0) {
			c.nc.Close()
			return
		}
		if len(q) > 0 {
			continue
		}
		<-c.wake
	}
}
