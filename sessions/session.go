package sessions

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/termgate/termgate/internal/ring"
	"github.com/termgate/termgate/screen/sanitize"
)

// state only moves forward: running → closing → closed.
type state int

const (
	stateRunning state = iota
	stateClosing
	stateClosed
)

var errSessionClosing = errors.New("session is closing")

// Session is one shell in one instance with its replay buffer and clients.
// It owns two goroutines for its whole life (run, pump) and two that run
// only while they have work (the resizer, the inputter); Close asks them to
// stop and Wait returns once all are gone and the shell's processes are
// killed.
type Session struct {
	id      string
	inst    Instance
	name    string // the session's name in its instance; "" the default (addr.go)
	login   string // the instance user the shell runs as, for its life ("" the default)
	proc    Process
	created time.Time
	clock   clockwork.Clock
	log     *slog.Logger
	cfg     *Config
	onEnd   func(*Session) // registry bookkeeping, called once by run
	// onReset, when set, moves the clients of a session that ended by a
	// reset into the fresh session (see move.go); run calls it last.
	onReset func(s *Session, reset *ResetError, clients []*Client)
	term    string // TERM the shell was started with; a reset keeps it
	agent   bool   // the shell has an agent socket (StartSpec.Agent); a reset keeps it

	obs       Observer    // set once by observe before the goroutines start; may be nil
	held      HeldProcess // proc, when a holder holds the shell (see hold.go); set before start
	recording string      // obs's recording name, if any; under mu once started (a rename changes it)

	// mu guards the relay (the ring, the replay, the clients and their
	// queues) and what must change with the clients in one step, so it
	// stays here: the size policy and pin (input waits for the resizes
	// asked for before it, resizeorder.go), the idle timer and the keep
	// (a reap and a holder's count read the clients with them), and the
	// pause (one flag; its notice goes to the clients of that moment).
	mu       sync.Mutex // guards the fields below but the atomics
	state    state
	cause    error
	ring     *ring.Buffer
	replay   Replayer
	clients  map[*Client]struct{}
	changed  chan struct{}        // closed when clients changes (see attachedwatch.go); nil: nobody waits
	size     Size                 // the window size the policy picked (sizepolicy.go)
	pin      Size                 // a pinned size (zero: none), see pinSize
	paused   bool                 // the instance is paused (paused.go)
	rz       resizeState          // the resizer's (resizer.go, resizeorder.go)
	inq      inputState           // the inputter's (input.go)
	reap     reapState            // idle reaping and the keep (keep.go)
	bytesOut atomic.Int64         // output bytes (atomic: Info reads it unlocked)
	info     atomic.Pointer[Info] // what Info shows but BytesOut (see infosnap.go)

	closeReq   chan struct{} // closed by the first Close
	pumpDone   chan error    // the pump's cause, sent once when the shell's output ends
	pumpGone   chan struct{} // closed when the pump has returned
	killFailed atomic.Bool   // a kill failed and is being retried
	tornDown   chan struct{} // closed when run has ended the shell, before it moves clients
	done       chan struct{} // closed when the session is fully closed

	// Who left when, and the shell's OSC 133 marks, for the away summary;
	// who is attached, for presence, hands and grants. Each under a lock
	// of its own, taken after mu (away.go, osc133.go, presence.go).
	away     awayBook
	presence presence
}

// resizeState is the resizer's part of a Session: it runs only while it
// has work, and input waits for the resizes asked for before it
// (resizeorder.go). Guarded by Session.mu but pace (the resizer's own:
// one runs at a time) and resizerWG.
type resizeState struct {
	resizing   bool           // a resizer runs
	applied    Size           // the size the backend last applied
	emuSize    Size           // the size the replayer was last given
	pace       resizePace     // see resizepace.go
	resizeSeq  uint64         // bumped by every size change
	resizedSeq uint64         // the changes up to this one are applied or failed
	resizedCh  chan struct{}  // closed when resizedSeq moves; nil: nobody waits
	resizerWG  sync.WaitGroup // the resizer
}

// inputState is the inputter's part of a Session: input waiting to be
// written, in order (input.go). Guarded by Session.mu but inputWG.
type inputState struct {
	inputQ    []*inputReq
	inputting bool           // an inputter runs
	inputWG   sync.WaitGroup // the inputter
}

// reapState is when the session is reaped: idle since, and a keep that
// postpones it (keep.go). Guarded by Session.mu, since a reap and a
// holder's count read the clients with it.
type reapState struct {
	idleSince time.Time
	idleTimer clockwork.Timer
	keepUntil time.Time       // no reaping before it; zero: none
	keepTimer clockwork.Timer // a held session's: ends the keep's count
}

// Info is a session's state as shown by "list" and GET /api/sessions.
type Info struct {
	Instance string `json:"instance"`
	// Name is the session's name in its instance ("" the default one).
	Name string `json:"name"`
	// Login is the instance user the shell runs as; "" is the instance's
	// default user.
	Login     string     `json:"login"`
	Session   string     `json:"session"`
	Created   time.Time  `json:"created"`
	Clients   int        `json:"clients"`
	IdleSince *time.Time `json:"idle_since"`
	BytesOut  int64      `json:"bytes_out"`
	// Attached lists who is attached, oldest first (Clients is its length).
	Attached []Attached `json:"attached"`
	// Recording names the session's recording (see Observer), if any.
	Recording string `json:"recording,omitempty"`
	// Durable: a holder in the instance holds the shell, which outlives
	// the gateway (see HeldProcess).
	Durable bool `json:"durable"`
	// Toolbox: the shell is termgate's toolbox, which the gateway brought
	// into an instance that has no shell of its own (ToolboxProcess).
	Toolbox bool `json:"toolbox,omitempty"`
	// Size is the shell's window size ("COLSxROWS"); SizePinned says it
	// is pinned (ssh HOST size) rather than following the clients.
	Size       string `json:"size"`
	SizePinned bool   `json:"size_pinned"`
	// ReapAt is when the session will be reaped if no client attaches
	// (null while one is attached); KeepUntil is its keep, if any
	// (ssh HOST keep).
	ReapAt    *time.Time `json:"reap_at"`
	KeepUntil *time.Time `json:"keep_until,omitempty"`
}

func newSession(id string, inst Instance, name string, proc Process, size Size, term string, cfg *Config, onEnd func(*Session)) *Session {
	ring := ring.New(cfg.BufferSize)
	s := &Session{
		id: id, inst: inst, name: name, proc: proc, cfg: cfg, onEnd: onEnd, term: term,
		clock:    cfg.Clock,
		created:  cfg.Clock.Now(),
		log:      cfg.Logger.With(append(nameAttr(inst.Name, name), "session", ShortID(id))...),
		ring:     ring,
		clients:  map[*Client]struct{}{},
		size:     size,
		closeReq: make(chan struct{}),
		pumpDone: make(chan error, 1),
		pumpGone: make(chan struct{}),
		tornDown: make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.replay = cfg.NewReplayer(ring, s.answer)
	s.resizeEmulatorLocked(size) // nothing else runs yet
	s.publishLocked()
	return s
}

// ID is the session's identifier (it changes on reset).
func (s *Session) ID() string { return s.id }

// Name is the session's name in its instance ("" the default session).
func (s *Session) Name() string { return s.name }

// Instance is the instance the shell runs in, under its current name.
func (s *Session) Instance() Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inst
}

func (s *Session) start() {
	s.observe()
	go s.pump()
	s.mu.Lock()
	s.rz.applied = s.size // the backend applied the initial size
	s.startIdleLocked()   // a session started by a reset may never be attached
	s.publishLocked()
	s.mu.Unlock()
	go func() {
		s.run()
		s.mu.Lock()
		s.state = stateClosed
		s.mu.Unlock()
		s.onEnd(s)
		close(s.done)
	}()
}

// Close asks the session to end with cause; it does not wait (see Wait).
// Attached clients get cause from Take once their queue is drained.
func (s *Session) Close(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requestCloseLocked(cause)
}

func (s *Session) requestCloseLocked(cause error) {
	if s.state != stateRunning {
		return
	}
	s.state, s.cause = stateClosing, cause
	if s.reap.idleTimer != nil {
		s.reap.idleTimer.Stop()
	}
	if s.reap.keepTimer != nil {
		s.reap.keepTimer.Stop()
	}
	s.presence.close()
	close(s.closeReq)
}

// Wait blocks until the session is closed: its processes killed and its
// goroutines gone.
func (s *Session) Wait() { <-s.done }

// Done is closed when the session is closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// run waits for the end (shell exit or a Close), then tears down in order:
// clients are told first, then the shell's processes are killed, then the
// pump is waited for.
func (s *Session) run() {
	var cause error
	streamEnded := false
	select {
	case cause = <-s.pumpDone:
		streamEnded = true
		s.mu.Lock()
		s.requestCloseLocked(cause)
		cause = s.cause // a Close may have raced the exit and won
		s.mu.Unlock()
	case <-s.closeReq:
		s.mu.Lock()
		cause = s.cause
		s.mu.Unlock()
	}
	s.mu.Lock()
	clients := s.clients
	s.clients = map[*Client]struct{}{}
	s.presence.end()
	s.clientsChangedLocked()
	s.mu.Unlock()
	// A reset moves the clients on instead (at the end, once the fresh
	// shell can start): they stay open meanwhile, and their input waits.
	var reset *ResetError
	moving := errors.As(cause, &reset) && s.onReset != nil
	if !moving {
		for c := range clients {
			c.close(cause, false)
		}
	}
	s.rz.resizerWG.Wait() // none starts once closing; no Resize may race the Kill
	// Kill even after the shell exited by itself: background jobs it left
	// must not outlive the session. A held shell may be left to its holder
	// instead (see finish).
	s.finish(cause, streamEnded)
	s.inq.inputWG.Wait()
	<-s.pumpGone
	s.observeClose()
	s.replay.Close()
	logEnded(s.log, cause, s.cfg.IdleTimeout)
	if s.cfg.OnEnd != nil {
		s.cfg.OnEnd(s.Info(), cause)
	}
	close(s.tornDown)
	if moving {
		s.onReset(s, reset, slices.Collect(maps.Keys(clients)))
	}
}

// pump copies shell output into the ring and every client's queue. It never
// blocks on a client: a client whose queue is full falls behind (to be
// brought forward, skip.go) or is dropped.
func (s *Session) pump() {
	defer close(s.pumpGone)
	defer s.recoverPump()
	var sl ring.Slab // see internal/ring: no allocation per chunk, large reads when busy
	for {
		n, err := s.proc.Read(sl.Buf())
		if n > 0 {
			chunk := sl.Chunk(n)
			// The observer first (it never blocks): a recording then
			// holds output before any resize a client makes after
			// reading it.
			s.observeOutput(chunk)
			s.deliver(chunk)
		}
		if err != nil {
			s.pumpDone <- s.endCause(err)
			return
		}
	}
}

// endCause turns the end of the output stream into what clients are told:
// the cause the backend's Read ended with (the Process contract), or
// ErrBackendLost for a bare end (io.EOF) or a broken stream.
func (s *Session) endCause(readErr error) error {
	if s.closing() {
		return nil // the Close cause stands
	}
	if cause := endedBy(readErr); cause != nil {
		return cause
	}
	if !errors.Is(readErr, io.EOF) {
		s.log.Warn("terminal stream broke", "err", readErr)
	}
	return ErrBackendLost
}

func (s *Session) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state != stateRunning
}

// instanceGone reports whether the instance no longer runs. A rename
// between two lookups is not taken for a stop: the backend's ID decides.
func (s *Session) instanceGone(ctx context.Context) bool {
	inst := s.Instance()
	got, err := s.cfg.Backend.Lookup(ctx, inst.Name)
	if errors.Is(err, ErrNotFound) {
		return true
	}
	return err == nil && got.ID != inst.ID
}

// deliver records a chunk and queues it for every client, then follows
// the shell's marks in it outside the session's lock (away.go).
func (s *Session) deliver(chunk []byte) {
	off := s.relay(chunk) // returns holding s.away.mu
	defer s.away.mu.Unlock()
	s.away.marks.feed(chunk, off, s.clock.Now)
}

// relay records a chunk and queues it for every client under mu, and
// returns the chunk's offset. It takes s.away.mu before it lets mu go, so
// a reader of the away book under mu sees the marks up to the ring's end.
func (s *Session) relay(chunk []byte) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	off := s.ring.End()
	s.ring.Write(chunk)
	s.replay.Write(chunk)
	s.bytesOut.Add(int64(len(chunk)))
	for c := range s.clients {
		res := c.enqueue(chunk)
		if res == overflowed {
			res = s.overflowLocked(c, chunk) // brought forward or dropped (skip.go)
		}
		switch res {
		case fellBehind:
			s.log.Debug("client fell behind; it is brought forward when it reads again", "client", c.label)
		case droppedSlow:
			s.droppedLocked(c)
		case alreadyClosed:
			// Closed by a Detach or a revocation racing this output: that
			// path removes and reports it.
		}
	}
	s.away.mu.Lock()
	return off
}

// AttachOptions says who attaches and from where it resumes.
type AttachOptions struct {
	// Size is the client's window; zero means unknown (keep the current).
	Size Size
	// Term is the client's TERM, used when the attach starts the session.
	Term string
	// Env (NAME=VALUE) goes into the shell's environment when the attach
	// starts the session, and a reset's (the client's accepted env
	// requests: sshd's --accept-env).
	Env []string
	// Session and Since ask to resume: when Session is still the current
	// session and Since still buffered, only bytes from Since on are sent.
	Session string
	Since   int64
	// Label names the client in logs ("ssh 10.0.0.5:41234").
	Label string
	// Allowed, when set, says whether the client's credentials still allow
	// the instance (by its current name). Attach asks it before joining (so
	// a client following a reset is checked again), and Registry.Recheck
	// and renames ask it of attached clients: a refusal disconnects the
	// client with a *RevokedError carrying the returned reason.
	Allowed func(instance string) error
	// Who (a key's or token's name), Via ("ssh", "websocket") and Remote
	// (the client's address) describe the client in Info.Attached.
	Who, Via, Remote string
	// Login is the instance user the client runs as ("" the default
	// user): a new session's shell runs as it, and a read-write client
	// may join only a session of its login (*WrongLoginError); an
	// observer joins any.
	Login string
	// ReadOnly attaches an observer: it gets the replay and all output,
	// but its input is refused (ErrReadOnly) and its window size never
	// changes the shell's.
	ReadOnly bool
	// Agent: a session this attach starts gets an agent socket
	// (StartSpec.Agent).
	Agent bool
	// Prefetch, when set, is a lookup of the instance started earlier
	// (Registry.Prefetch); Attach uses it instead of a lookup of its own
	// when it names the same instance and is fresh.
	Prefetch *Prefetch
}

// attach registers a client, then tells the others (presence.go).
func (s *Session) attach(opts AttachOptions, created bool) (*Client, error) {
	c, err := s.register(opts, created) // returns holding s.presence.mu
	if err != nil {
		return nil, err
	}
	defer s.presence.mu.Unlock()
	s.presence.joinedLocked(c, s.cfg.NotifyJoins)
	return c, nil
}

// register registers a client; the replay and the registration happen in
// one critical section, so no output is lost or doubled between them. On
// success it takes s.presence.mu before it lets mu go.
func (s *Session) register(opts AttachOptions, created bool) (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateRunning {
		return nil, errSessionClosing
	}
	info := AttachInfo{Instance: s.inst.Name, Session: s.id, New: created, Offset: s.ring.End()}
	var replay []byte
	if opts.Session != "" && opts.Session == s.id {
		ok := opts.Since >= s.ring.Start() && opts.Since <= s.ring.End()
		if ok {
			// What the client already holds tells the sanitizer what
			// state its terminal is in at Since.
			b := s.ring.Bytes()
			replay = sanitize.StripQueriesFrom(b, int(opts.Since-s.ring.Start()))
		}
		info.Gap = !ok
	}
	if replay == nil { // a fresh attach, a stale session or a gap
		replay = s.replay.Replay()
	}
	info.Replay = len(replay)
	if len(replay) > s.cfg.ClientQueue {
		// It would drop the client at once; registered, it would be
		// counted for ever (red team round 3, M1).
		s.log.Warn("attach refused: the replay does not fit a client's queue", "client", opts.Label, "replay", len(replay), "queue", s.cfg.ClientQueue)
		return nil, &ReplayTooLargeError{Replay: len(replay), Queue: s.cfg.ClientQueue}
	}
	c := newClient(s, info, opts, s.cfg.ClientQueue)
	if len(replay) > 0 {
		c.enqueue(replay)        // fits: the client's queue is empty
		c.skip.headReplay = true // nobody else has c yet
	}
	if away := s.returnedLocked(opts.Who); away != nil {
		c.notifyEvent(away) // after the screen (away.go)
	}
	s.clients[c] = struct{}{}
	s.joinedLocked()
	c.sizeShown = s.size
	if opts.Size.Valid() {
		s.wantSizeLocked(c, opts.Size)
	}
	c.setAttachSize(s.size)
	s.log.Debug("client attached", "client", opts.Label, "clients", len(s.clients), "offset", info.Offset, "gap", info.Gap)
	s.presence.mu.Lock()
	return c, nil
}

// joinedLocked does the bookkeeping for clients that joined: they are
// counted and the session is no longer idle.
func (s *Session) joinedLocked() {
	s.clientsChangedLocked()
	s.replay.Attached(len(s.clients))
	if s.reap.idleTimer != nil {
		s.reap.idleTimer.Stop()
		s.reap.idleTimer = nil
	}
	s.reap.idleSince = time.Time{}
	s.publishLocked()
}

func (s *Session) detach(c *Client) { s.remove(c, "client detached") }

// remove takes a closed client off the session and logs why, then tells
// the others (presence.go).
func (s *Session) remove(c *Client, msg string, attrs ...any) {
	if !s.unregister(c, msg, attrs...) { // true: holding s.presence.mu
		return
	}
	defer s.presence.mu.Unlock()
	s.presence.leftLocked(c, s.cfg.NotifyJoins)
}

// unregister takes c off the session; when it was on, it takes
// s.presence.mu before it lets mu go and returns true.
func (s *Session) unregister(c *Client, msg string, attrs ...any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[c]; !ok {
		return false
	}
	delete(s.clients, c)
	s.leftLocked(c)
	s.clientsChangedLocked()
	s.replay.Attached(len(s.clients))
	s.applySizePolicyLocked(false) // the fall-back when the size was c's
	s.log.Debug(msg, append([]any{"client", c.label, "clients", len(s.clients)}, attrs...)...)
	s.startIdleLocked()
	s.presence.mu.Lock()
	return true
}

// startIdleLocked arms the idle reaper once the last client has gone. A
// held session's holder reaps it (it counts every gateway's clients, see
// clientsChangedLocked), so no timer is armed for it here.
func (s *Session) startIdleLocked() {
	if len(s.clients) > 0 || s.state != stateRunning || s.reap.idleTimer != nil {
		return
	}
	s.reap.idleSince = s.clock.Now()
	s.publishLocked()
	s.armIdleLocked()
}

// armIdleLocked (re)arms the idle reaper of an idle session for the later
// of the idle timeout and its keep (keep.go). Called with mu held.
func (s *Session) armIdleLocked() {
	if s.held != nil || len(s.clients) > 0 || s.state != stateRunning {
		return
	}
	if s.reap.idleTimer != nil {
		s.reap.idleTimer.Stop()
	}
	var t clockwork.Timer
	t = s.clock.AfterFunc(s.reapAtLocked().Sub(s.clock.Now()), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.reap.idleTimer == t && len(s.clients) == 0 {
			s.log.Debug("reaping idle session", "idle_timeout", s.cfg.IdleTimeout.String())
			s.requestCloseLocked(ErrIdle)
		}
	})
	s.reap.idleTimer = t
}

func (s *Session) setSizeLocked(size Size) {
	if size == s.size {
		return
	}
	s.size = size
	s.publishLocked()
	s.rz.resizeSeq++
	s.startResizerLocked() // it resizes the emulator too, paced
}
