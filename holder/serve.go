package holder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/termgate/termgate/internal/agentwire"
	"github.com/termgate/termgate/internal/ring"
)

// ServeConfig configures a holder daemon.
type ServeConfig struct {
	// Socket is the unix socket gateways reach the holder on (through an
	// exec of "holder attach"); its directory must exist with mode 0700.
	Socket string
	// Session is the held session's ID (a reset replaces it with the ID
	// the gateway sends).
	Session string
	// Shell is the command to start, with Env added to its environment
	// (TERM, TERMGATE_SESSION).
	Shell []string
	Env   []string
	// AgentSocket sets each shell's SSH_AUTH_SOCK to its session's agent
	// socket (agentwire.Socket): a reset's shell gets the new session's.
	AgentSocket bool
	// Cols and Rows are the initial window size.
	Cols, Rows int
	// BufferSize is the replay ring's size; IdleTimeout ends the session
	// after that long with no client on any gateway.
	BufferSize  int
	IdleTimeout time.Duration
	// Login is the instance user Shell runs as ("" the default user), for
	// the Hello: Shell itself becomes it (termgate-holder as LOGIN).
	Login string
	// Build names this holder's build in its Hello.
	Build  string
	Logger *slog.Logger
	// Ready, when set, is called once the socket listens and the shell
	// runs.
	Ready func()
	// Proto is the protocol version this holder announces and accepts;
	// 0 means Version (tests build holders of another version with it).
	Proto int
	// NoPassing makes the holder ignore descriptors an attach process
	// passes and serve every gateway over the socket, as holders before
	// descriptor passing did (tests play such a holder with it).
	NoPassing bool
	// Key is this holder's key (KeyLen bytes; see proof.go): only a
	// gateway that proves it has it is served.
	Key []byte
}

// ErrAlreadyHeld is what Serve returns when another holder already holds
// the socket: a second "serve" (say, from a second gateway racing the
// first) must neither take the socket nor start a second shell; its
// gateway connects to the holder that is there instead.
var ErrAlreadyHeld = errors.New("a live holder already holds this socket")

// heldEnv marks a held shell and everything it starts: a gateway's sweep
// of its own leftover shells spares them (they outlive gateways on
// purpose).
const heldEnv = "TERMGATE_HELD=1"

// holder is the daemon's state. One mutex guards the small fields; no I/O
// is done while holding it, except the non-blocking queueing of output.
type holder struct {
	cfg ServeConfig
	log *slog.Logger

	mu      sync.Mutex
	ln      *net.UnixListener // the current one (relisten.go replaces it)
	sockID  fileID            // the socket file ln listens on
	shell   *shell
	ring    *ring.Buffer
	session string
	cols    int
	rows    int
	conns   map[*conn]struct{}
	created time.Time // when the current session's shell started
	idle    *time.Timer
	ended   bool

	done chan struct{} // closed when the daemon ends
	wg   sync.WaitGroup
}

// Serve runs a holder until its session ends (shell exit, idle reaping) or
// ctx is done. It returns the reason.
func Serve(ctx context.Context, cfg ServeConfig) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BufferSize < ring.MinSize {
		cfg.BufferSize = 64 << 10
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.Cols < 1 || cfg.Rows < 1 {
		cfg.Cols, cfg.Rows = 80, 24
	}
	if cfg.Proto == 0 {
		cfg.Proto = Version
	}
	if len(cfg.Key) != KeyLen {
		return fmt.Errorf("holder: a key of %d bytes, want %d (serve needs --key-stdin)", len(cfg.Key), KeyLen)
	}
	// The lock, held for the daemon's life, decides between racing
	// holders; only its owner may replace the socket.
	lock, err := lockSocket(cfg.Socket + ".lock")
	if err != nil {
		return err
	}
	defer lock.Close()
	_ = os.Remove(cfg.Socket) // a stale socket of a holder that died
	ln, id, err := listenAt(cfg.Socket)
	if err != nil {
		return err
	}
	h := &holder{
		cfg: cfg, log: cfg.Logger, ln: ln, sockID: id, ring: ring.New(cfg.BufferSize),
		session: cfg.Session, cols: cfg.Cols, rows: cfg.Rows,
		conns: map[*conn]struct{}{}, done: make(chan struct{}),
	}
	if err := h.startShell(nil); err != nil {
		ln.Close()
		h.removeSocket()
		return err
	}
	h.armIdle()
	h.wg.Go(func() { h.acceptOn(ln) })
	h.wg.Go(func() { h.watchSocket(lock) })
	if cfg.Ready != nil {
		cfg.Ready()
	}
	var why error
	select {
	case <-ctx.Done():
		why = ctx.Err()
	case <-h.done:
	}
	h.end("holder stopped")
	h.closeListener()
	h.removeSocket()
	h.drain()
	return why
}

// drain waits for the connections to send what they have (the exit
// first), for connStall at most: a gateway that takes nothing would
// otherwise keep the holder, its session over, alive forever. Then it
// cuts them, which interrupts a write in progress.
func (h *holder) drain() {
	waited := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(waited)
	}()
	t := time.NewTimer(connStall)
	defer t.Stop()
	select {
	case <-waited:
		return
	case <-t.C:
	}
	h.mu.Lock()
	n := len(h.conns)
	for c := range h.conns {
		c.drop()
	}
	h.mu.Unlock()
	h.log.Warn("gateways took not the end of the session; dropped", "gateways", n, "waited", connStall.String())
	<-waited
}

// startShell starts a shell for the current session. Called without h.mu.
// startShell starts the session's shell and its pump. announce, when not
// nil, goes to every gateway before the pump starts (a reset's frame): a
// gateway must learn of the new session before its first output, or it
// reads that output as the old session's.
func (h *holder) startShell(announce []byte) error {
	h.mu.Lock()
	id, cols, rows := h.session, h.cols, h.rows
	h.mu.Unlock()
	cmd := exec.Command(h.cfg.Shell[0], h.cfg.Shell[1:]...)
	cmd.Env = append(append(os.Environ(), h.cfg.Env...), heldEnv, "TERMGATE_SESSION="+id)
	if h.cfg.AgentSocket {
		cmd.Env = append(cmd.Env, "SSH_AUTH_SOCK="+agentwire.Socket(id))
	}
	sh, err := startShell(cmd, cols, rows)
	if err != nil {
		return err
	}
	h.mu.Lock()
	if h.ended { // the session ended while this shell started (a reset raced it)
		h.mu.Unlock()
		sh.kill()
		sh.wait()
		return errors.New("holder: the session ended")
	}
	h.shell = sh
	h.created = time.Now()
	if announce != nil {
		for c := range h.conns {
			c.send(announce)
		}
	}
	h.mu.Unlock()
	pumped := make(chan struct{})
	h.wg.Go(func() {
		defer close(pumped)
		h.pump(sh, id)
	})
	h.wg.Go(func() { h.awaitExit(sh, id, pumped) })
	return nil
}

// pump copies the shell's output into the ring and every connection until
// the terminal ends (nothing holds its other end any more, or it is
// closed).
func (h *holder) pump(sh *shell, id string) {
	buf := make([]byte, 32<<10)
	for {
		n, err := sh.pty.Read(buf)
		if err == nil {
			n = sh.more(buf, n)
		}
		if n > 0 {
			h.deliver(id, buf[:n])
			h.waitForGateways()
		}
		if err != nil {
			return
		}
	}
}

func (h *holder) deliver(id string, p []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.session != id {
		return // late output of a shell a reset replaced
	}
	off := h.ring.End()
	h.ring.Write(p)
	frame, _ := OutputFrame(nil, off, p)
	for c := range h.conns {
		c.send(frame)
	}
}

// finish tells every gateway how the session ended, kills what is left of
// it and ends the daemon.
func (h *holder) finish(msg ExitMsg) { h.finishShell(nil, msg) }

// finishShell is finish for the shell only that exited: nothing when a
// reset replaced it meanwhile (the reset ends it and what it started).
func (h *holder) finishShell(only *shell, msg ExitMsg) {
	frame, _ := ControlFrame(TypeExit, msg)
	h.mu.Lock()
	if h.ended || only != nil && h.shell != only {
		h.mu.Unlock()
		return
	}
	h.ended = true
	sh := h.shell
	for c := range h.conns {
		c.send(frame)
		c.closeAfterQueue()
	}
	h.mu.Unlock()
	if sh != nil {
		sh.kill()
	}
	h.log.Info("session ended", "session", msg.Session, "code", msg.Code, "cause", msg.Cause)
	close(h.done)
}

func (h *holder) end(cause string) {
	h.mu.Lock()
	id := h.session
	h.mu.Unlock()
	h.finish(ExitMsg{Session: id, Code: -1, Cause: cause})
}

// armIdle (re)starts the idle timer when no gateway has a client.
func (h *holder) armIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armIdleLocked()
}

func (h *holder) armIdleLocked() {
	total := 0
	for c := range h.conns {
		total += c.clients
	}
	if total > 0 {
		if h.idle != nil {
			h.idle.Stop()
			h.idle = nil
		}
		return
	}
	if h.idle != nil || h.ended {
		return
	}
	h.idle = time.AfterFunc(h.cfg.IdleTimeout, func() {
		h.log.Info("reaping idle session", "idle_timeout", h.cfg.IdleTimeout.String())
		h.mu.Lock()
		id := h.session
		h.mu.Unlock()
		h.finish(ExitMsg{Session: id, Code: -1, Cause: "idle"})
	})
}

// acceptOn serves ln's connections until ln is closed (at the end, or
// when relisten replaces it).
func (h *holder) acceptOn(ln net.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		c := newConn(h, nc)
		h.wg.Go(c.serve)
	}
}

// reset kills the shell and everything it started and starts a fresh one
// under the new session ID; every gateway is told.
func (h *holder) reset(msg ResetMsg) error {
	if msg.NewSession == "" {
		return errors.New("reset without a new session ID")
	}
	h.mu.Lock()
	if h.ended {
		h.mu.Unlock()
		return errors.New("reset after the session ended")
	}
	old := h.shell
	msg.OldSession = h.session
	h.session = msg.NewSession
	h.ring = ring.New(h.cfg.BufferSize)
	h.shell = nil
	h.mu.Unlock()
	if old != nil {
		old.kill()
	}
	frame, _ := ControlFrame(TypeReset, msg)
	if err := h.startShell(frame); err != nil {
		h.finish(ExitMsg{Session: msg.NewSession, Code: -1, Cause: "reset failed: " + err.Error()})
		return err
	}
	h.log.Info("session reset", "old", msg.OldSession, "new", msg.NewSession, "by", msg.By)
	return nil
}

// waitForGateways holds the pump (and so the shell's output) while a
// gateway has more than connHigh waiting, dropping a gateway that takes
// nothing for connStall (see connHigh).
func (h *holder) waitForGateways() {
	var stall *time.Timer
	defer func() {
		if stall != nil {
			stall.Stop()
		}
	}()
	for {
		c := h.slowest()
		if c == nil {
			return
		}
		if stall == nil {
			stall = time.NewTimer(connStall)
		}
		select {
		case <-c.took:
			stall.Reset(connStall) // it is moving: a fresh allowance
		case <-stall.C:
			h.log.Warn("gateway takes no output; dropped (it reattaches from its offset)", "waited", connStall.String())
			c.drop()
			stall.Reset(connStall)
		case <-h.done:
			return
		}
	}
}

// slowest returns a gateway that is behind, or nil.
func (h *holder) slowest() *conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.conns {
		if c.behind() {
			return c
		}
	}
	return nil
}
