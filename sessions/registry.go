package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/termgate/termgate/internal/buckets"
	"github.com/termgate/termgate/internal/ring"
)

// MinBufferSize is the smallest replay buffer the contract allows.
const MinBufferSize = ring.MinSize

// Config configures a Registry; New fills in the defaults.
type Config struct {
	Backend Backend
	// BufferSize is the replay buffer per session (default 64 KiB, at least
	// MinBufferSize).
	BufferSize int
	// IdleTimeout reaps a session with no client for this long (default 30m).
	IdleTimeout time.Duration
	// MaxKeep bounds a keep (Registry.Keep: no reaping for that long with
	// no client; default 24h).
	MaxKeep time.Duration
	// Shell is the command started in an instance; empty means automatic.
	Shell []string
	// ClientQueue is how many bytes of output may wait for one client before
	// it is dropped as too slow (default 16 MiB: about half a second of a
	// container printing flat out, so a loaded host does not drop readers).
	ClientQueue int
	// StuckTimeout: a client brought forward (skip.go) that takes nothing
	// for this long is dropped at its next overflow (default 60s: the
	// contract's liveness timeout, within which a client that stops
	// reading is brought forward when it reads again).
	StuckTimeout time.Duration
	// StartTimeout bounds starting a shell; KillTimeout bounds killing one
	// and other backend calls made while tearing down (defaults 15s, 10s).
	StartTimeout, KillTimeout time.Duration
	// InputTimeout is how long Client.Write waits for a shell that takes
	// no input before it gives up with ErrInputStalled (default 5s).
	InputTimeout time.Duration
	// NewReplayer picks the replay strategy (default NewRawReplayer).
	NewReplayer NewReplayerFunc
	// NotifyJoins: clients get a *Presence in band when another joins or
	// leaves (the SSH listener prints it; the page has the roster).
	NotifyJoins bool
	// SizePolicy decides the shell's window size from its clients'
	// (default SizeLatest; see sizepolicy.go).
	SizePolicy SizePolicy
	// OnEnd, when set, is called once for every session that ends, with
	// the cause its clients were given (the audit trail uses it).
	OnEnd  func(info Info, cause error)
	Clock  clockwork.Clock
	Logger *slog.Logger

	// MaxPerInstance bounds the sessions of one instance, its default
	// session included (--max-sessions-per-instance, default 8).
	// MaxNamedPerWho bounds the named sessions one credential (a client's
	// Who) has started and that still run, across instances
	// (--max-named-sessions, default 32).
	MaxPerInstance, MaxNamedPerWho int

	// Observe, when set, is asked once for every session that starts for
	// an Observer of its output and sizes (nil: none); see Observer.
	Observe func(ObservedSession) Observer

	stop      chan struct{} // closed when Shutdown gives up: kill retries end
	reachable *wakeup       // fired when the backend is reachable again: kill retries go on
}

// Registry holds the sessions of every instance (its default one and
// named ones, addr.go), shared by every listener.
type Registry struct {
	cfg Config

	mu     sync.Mutex                  // guards slots, closed and holderResets
	slots  map[string]map[string]*slot // by Instance.ID, then session name (slots.go)
	closed bool
	// holderResets limits the resets announced by holders that the
	// registry follows, by Instance.ID (see takeHolderResetLocked).
	holderResets *buckets.Table

	watchCancel context.CancelFunc
	watchDone   chan struct{}
	shutDown    chan struct{} // closed when Shutdown has ended every session
	closeDone   sync.Once
	stopOnce    sync.Once
}

// slot lets concurrent first attaches wait for one shell instead of
// starting two: the first creates the slot, the others wait on ready.
type slot struct {
	key     slotKey
	who     string // who started the session (AttachOptions.Who), for MaxNamedPerWho
	ready   chan struct{}
	sess    *Session // set before ready is closed; nil with err
	err     error
	adopted bool // sess was adopted from its holder, not started
	// login is the instance user a start runs the shell as (the
	// starter's AttachOptions.Login, or the reset session's); an adopted
	// session's is its holder's (Session.login).
	login string
	// env is what the attach that started the session asked for
	// (AttachOptions.Env), for its start and every reset's.
	env []string
}

// ended reports whether the slot's start has finished (successfully or not).
func (sl *slot) ended() bool {
	select {
	case <-sl.ready:
		return true
	default:
		return false
	}
}

// New checks cfg, fills in defaults and starts watching the backend for
// instances that stop.
func New(cfg Config) (*Registry, error) {
	if cfg.Backend == nil {
		return nil, errors.New("sessions: no backend")
	}
	if cfg.BufferSize == 0 {
		cfg.BufferSize = 64 << 10
	}
	if cfg.BufferSize < MinBufferSize {
		return nil, fmt.Errorf("buffer size %d bytes is too small: at least 10KiB is needed to replay a screen", cfg.BufferSize)
	}
	if cfg.MaxKeep <= 0 {
		cfg.MaxKeep = 24 * time.Hour
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.ClientQueue <= 0 {
		cfg.ClientQueue = 16 << 20
	}
	if cfg.ClientQueue < cfg.BufferSize {
		cfg.ClientQueue = cfg.BufferSize // the replay must fit
	}
	if cfg.StuckTimeout <= 0 {
		cfg.StuckTimeout = 60 * time.Second
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 15 * time.Second
	}
	if cfg.KillTimeout <= 0 {
		cfg.KillTimeout = 10 * time.Second
	}
	if cfg.MaxPerInstance <= 0 {
		cfg.MaxPerInstance = 8
	}
	if cfg.MaxNamedPerWho <= 0 {
		cfg.MaxNamedPerWho = 32
	}
	if cfg.InputTimeout <= 0 {
		cfg.InputTimeout = 5 * time.Second
	}
	if cfg.NewReplayer == nil {
		cfg.NewReplayer = rawReplayerFunc
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.stop = make(chan struct{})
	cfg.reachable = &wakeup{}
	r := &Registry{cfg: cfg, slots: map[string]map[string]*slot{}, holderResets: buckets.New(buckets.InstanceResets), watchDone: make(chan struct{}), shutDown: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	r.watchCancel = cancel
	go func() {
		defer close(r.watchDone)
		if err := cfg.Backend.Watch(ctx, r.instanceEvent); err != nil && ctx.Err() == nil {
			cfg.Logger.Error("watching instances stopped", "err", err)
		}
	}()
	return r, nil
}

// Attach joins the session at addr (INSTANCE or INSTANCE+NAME, addr.go),
// starting one when there is none.
func (r *Registry) Attach(ctx context.Context, addr string, opts AttachOptions) (*Client, error) {
	a, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	inst, err := r.lookup(ctx, a.Instance, opts.Prefetch)
	if err != nil {
		return nil, err
	}
	if opts.Allowed != nil {
		if err := opts.Allowed(inst.Name); err != nil {
			return nil, &RevokedError{Reason: err.Error()}
		}
	}
	for tries := 1; ; tries++ {
		sl, created, err := r.slotFor(inst, a.Name, opts.Who, opts.Login)
		if err != nil {
			return nil, err
		}
		if created {
			sl.env = opts.Env
			size := opts.Size
			if size.IsZero() || !size.Valid() || opts.ReadOnly {
				// An observer never sizes the shell, not even the first.
				size = DefaultSize
			}
			how := adoptOrStart
			if opts.ReadOnly {
				how = adoptOnly // an observer watches a session, never starts one
			}
			r.fill(context.Background(), sl, inst, newID(), size, opts.Term, opts.Agent && !opts.ReadOnly, how)
		}
		select {
		case <-sl.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if created && opts.ReadOnly && errors.Is(sl.err, ErrNotHeld) {
			return nil, ErrNothingToWatch
		}
		if errors.Is(sl.err, ErrNotHeld) && tries < maxNotHeldTries {
			continue // AdoptAll found nothing to adopt: start one
		}
		if sl.err != nil {
			return nil, sl.err
		}
		// One login for the session's life; observers watch any.
		if !opts.ReadOnly && sl.sess.login != opts.Login {
			return nil, &WrongLoginError{Addr: a.String(), Login: sl.sess.login, Asked: opts.Login}
		}
		c, err := sl.sess.attach(opts, created && !sl.adopted)
		if errors.Is(err, errSessionClosing) {
			// The session is ending under us: once its processes are
			// killed its slot goes, and the next round starts or joins
			// the next session. Never start a second shell beside a
			// previous one whose kill keeps failing.
			if sl.sess.killFailed.Load() {
				return nil, ErrPreviousShellAlive
			}
			select {
			case <-sl.sess.Done():
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			r.forget(sl)
			continue
		}
		return c, err
	}
}

// maxNotHeldTries bounds the rounds of an Attach that finds no held
// session where a start then says there is one (a holder whose socket was
// deleted holds its lock: issue 20, D3): without it the attach would go
// round for ever, answering nobody and logging nothing.
const maxNotHeldTries = 3

// slotFor returns the slot of the instance's session name, creating an
// empty one (started by who) when none and the caps allow.
func (r *Registry) slotFor(inst Instance, name, who, login string) (*slot, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false, ErrClosed
	}
	k := slotKey{inst.ID, name}
	if sl := r.slotLocked(k); sl != nil {
		return sl, false, nil
	}
	if err := r.capLocked(k, inst.Name, who); err != nil {
		return nil, false, err
	}
	sl := &slot{key: k, who: who, login: login, ready: make(chan struct{})}
	r.putLocked(sl)
	return sl, true, nil
}

// fill starts the shell for a slot this goroutine created, or adopts the
// one a holder holds (see open), within StartTimeout. Its shell is shared:
// the attach that happens to start it passes no context of its own.
func (r *Registry) fill(ctx context.Context, sl *slot, inst Instance, id string, size Size, term string, agent bool, how openHow) {
	defer close(sl.ready)
	defer r.recoverFill(sl, inst)
	if term == "" {
		term = "xterm-256color"
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.StartTimeout)
	defer cancel()
	proc, adopted, err := r.open(ctx, inst, StartSpec{SessionID: id, Name: sl.key.name, Login: sl.login, Shell: r.cfg.Shell, Term: term, Size: size, Env: sl.env, Agent: agent}, how)
	if err != nil {
		sl.err = err
		r.forget(sl)
		return
	}
	hp, held := proc.(HeldProcess)
	if held && hp.Held().Session != "" {
		id = hp.Held().Session // the holder's numbering and ID go on
	}
	sl.adopted = adopted
	sl.sess = newSession(id, inst, sl.key.name, proc, size, term, &r.cfg, func(s *Session) { r.forget(sl) })
	sl.sess.login = sl.login
	if held {
		sl.sess.login = hp.Held().Login // what the holder's shell runs as
	}
	sl.sess.agent = agent
	sl.sess.onReset = func(s *Session, reset *ResetError, clients []*Client) { r.follow(s, sl, reset, clients) }
	if held {
		sl.sess.hold(hp)
	}
	sl.sess.start()
	msg := "session started"
	if adopted {
		msg = "session adopted from its holder"
	}
	// Debug: the attach that started it says new=true at info.
	r.cfg.Logger.Debug(msg, append(nameAttr(inst.Name, sl.key.name), "session", ShortID(id), "durable", held)...)
}

func (r *Registry) forget(sl *slot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(sl)
}

// nameAttr is the log attributes naming an instance and, for a named
// session, the session's name.
func nameAttr(instance, name string) []any {
	if name == "" {
		return []any{"instance", instance}
	}
	return []any{"instance", instance, "name", name}
}

// Reset kills the shell of the session at addr (INSTANCE or
// INSTANCE+NAME) and everything it started, and starts a fresh session;
// attached clients are moved to it (see move.go). With no session yet, it
// just starts one (within the instance's cap), as the default user.
func (r *Registry) Reset(ctx context.Context, addr, by string) (*Session, error) {
	return r.ResetAs(ctx, addr, by, "")
}

// ResetAs is Reset by a caller whose default login (keys.Access.Login)
// is login: a session that does not exist yet starts as login, as its
// first attach would; an existing one keeps its own.
func (r *Registry) ResetAs(ctx context.Context, addr, by, login string) (*Session, error) {
	a, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	inst, err := r.cfg.Backend.Lookup(ctx, a.Instance)
	if err != nil {
		return nil, err
	}
	k := slotKey{inst.ID, a.Name}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	old := r.slotLocked(k)
	if old != nil && old.ended() && old.sess != nil && old.sess.killFailed.Load() {
		r.mu.Unlock()
		return nil, ErrPreviousShellAlive
	}
	sl := &slot{key: k, ready: make(chan struct{})}
	if old != nil {
		sl.who, sl.login = old.who, old.login // the starter still counts it
		sl.env = old.env                      // the starter's environment, as its TERM
	} else if err := r.capLocked(k, inst.Name, ""); err != nil {
		r.mu.Unlock()
		return nil, err
	} else {
		sl.login = login
	}
	r.putLocked(sl)
	r.mu.Unlock()

	id, size, term, agent := newID(), DefaultSize, "", false
	if old != nil {
		<-old.ready
		if old.sess != nil {
			size, term, agent = old.sess.currentSize(), old.sess.term, old.sess.agent
			sl.login = old.sess.login // an adopted one's is its holder's
			old.sess.Close(&ResetError{OldSession: old.sess.id, NewSession: id, By: by})
			select {
			case <-old.sess.tornDown: // then it moves its clients to sl
			case <-ctx.Done():
				// The old shell is not dead yet (its kill is being
				// retried): keep it in its place so nobody starts a
				// second shell beside it.
				r.mu.Lock()
				if r.slotLocked(k) == sl {
					r.putLocked(old)
				}
				r.mu.Unlock()
				sl.err = ErrPreviousShellAlive
				close(sl.ready)
				return nil, ErrPreviousShellAlive
			}
		}
	}
	r.fill(context.Background(), sl, inst, id, size, term, agent, resetHeld)
	if sl.err != nil {
		return nil, sl.err
	}
	// The reset's one info line (the old session's end is debug): the
	// old session, the new one and who.
	args := append(nameAttr(inst.Name, a.Name), "session", ShortID(id))
	if old != nil && old.sess != nil {
		args = append(args, "old", ShortID(old.sess.id))
	}
	r.cfg.Logger.Info("session reset", append(args, "by", by)...)
	return sl.sess, nil
}

// instanceEvent ends the sessions of an instance that stopped, and makes
// the sessions of a renamed instance follow the new name; a backend
// reachable again retries the kills that failed meanwhile. A paused
// instance keeps its session (paused.go).
func (r *Registry) instanceEvent(ev InstanceEvent) {
	if ev.Reachable {
		r.cfg.reachable.fire()
		return
	}
	if ev.Paused || ev.Unpaused {
		r.pauseEvent(ev)
		return
	}
	r.mu.Lock()
	slots := r.instanceSlotsLocked(ev.Instance.ID)
	r.mu.Unlock()
	for _, sl := range slots {
		// One still starting is skipped: the start fails or its stream
		// ends by itself.
		if !sl.ended() || sl.sess == nil {
			continue
		}
		if ev.Gone {
			sl.sess.Close(ErrInstanceGone)
			continue
		}
		if sl.sess.rename(ev.Instance.Name) {
			sl.sess.observeRename(ev.Instance.Name)
			sl.sess.recheck()
		}
	}
}

// Sessions lists the live sessions, oldest first.
func (r *Registry) Sessions() []Info {
	r.mu.Lock()
	var live []*Session
	for _, sl := range r.allSlotsLocked() {
		select {
		case <-sl.ready:
			if sl.sess != nil {
				live = append(live, sl.sess)
			}
		default:
		}
	}
	r.mu.Unlock()
	out := make([]Info, 0, len(live))
	for _, s := range live {
		out = append(out, s.Info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// Ready reports whether the backend answers.
func (r *Registry) Ready(ctx context.Context) error { return r.cfg.Backend.Ping(ctx) }

// Shutdown refuses new attaches, ends every session (killing its processes;
// a held session's clients get ErrRestart and its shell is left to its
// holder) and stops watching the backend. It returns ctx.Err() if that
// takes longer than ctx allows.
func (r *Registry) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	slots := r.allSlotsLocked()
	r.mu.Unlock()
	r.watchCancel()

	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		var held atomic.Int32
		for _, sl := range slots {
			wg.Go(func() {
				<-sl.ready
				if sl.sess != nil {
					cause := ErrShutdown
					if sl.sess.held != nil {
						cause = ErrRestart // the shell stays with its holder
						held.Add(1)
					}
					sl.sess.Close(cause)
					sl.sess.Wait()
				}
			})
		}
		wg.Wait()
		if n := held.Load(); n > 0 {
			r.cfg.Logger.Info("durable sessions left running in their instances; the next gateway adopts them", "sessions", n)
		}
		<-r.watchDone
		r.closeDone.Do(func() { close(r.shutDown) })
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		r.stopOnce.Do(func() { close(r.cfg.stop) }) // end kill retries
		return ctx.Err()
	}
}

// Done is closed once Shutdown has ended every session.
func (r *Registry) Done() <-chan struct{} { return r.shutDown }

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}
