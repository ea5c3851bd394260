// Package startup is a starting gateway's background work on every
// instance: ending the shells an earlier run left there (the sweep), then
// adopting the session a holder holds there. The listeners open first; the
// Worker goes through the instances a few at a time, each with its own
// timeout and no deadline for all, and retries what failed with backoff. A
// gate (Wait) lets a new shell start in an instance only once that
// instance's sweep is done: an attach there does that instance at once
// rather than waiting its turn, and never gets a second shell beside an old
// one (contract, "Build and run": start-up).
//
// Goroutines: Start runs one (the dispatcher), which starts one per
// attempt, at most Config.Workers at a time; Wait may start one more
// attempt for the instance it waits for. Stop cancels them all and waits.
// Locks: Worker.mu guards the entries and counts only; no I/O under it.
package startup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/termgate/termgate/sessions"
)

// Config configures a Worker.
type Config struct {
	// Name prefixes the log messages (the backend: "docker").
	Name string
	// List lists the running instances (retried until it succeeds).
	List func(ctx context.Context) ([]sessions.Instance, error)
	// Sweep ends what an earlier run left in inst, reporting how many
	// processes it ended. It runs at most once successfully per instance:
	// once it succeeded, new shells start there, and a second sweep would
	// end them too.
	Sweep func(ctx context.Context, inst sessions.Instance) (ended int, err error)
	// Adopt, when set, adopts the session held in inst after its sweep,
	// reporting whether there was one. Failures are retried AdoptTries
	// times, then left to the instance's first attach.
	Adopt func(ctx context.Context, inst sessions.Instance) (adopted bool, err error)
	// Workers bounds the attempts running at once (Wait's aside); zero
	// means 8.
	Workers int
	// Timeout bounds one attempt at one instance; zero means 30 s.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a retry (doubling
	// from the first); zero means 1 s and 1 minute.
	MinBackoff, MaxBackoff time.Duration
	// AdoptTries is how often an adoption is tried; zero means 5.
	AdoptTries int
	Logger     *slog.Logger
}

// ErrStopped is Wait's error once the Worker stopped (the gateway is
// shutting down) for an instance it had not swept.
var ErrStopped = errors.New("the gateway is shutting down")

// NotSweptError is Wait's error when the sweep of its instance failed:
// a shell started there now could run beside one an earlier run left.
type NotSweptError struct {
	Instance string
	Err      error
}

func (e *NotSweptError) Error() string {
	return fmt.Sprintf("could not yet end the shells an earlier gateway run left in %q (%s); no new shell was started beside them: try again in a moment (the gateway keeps retrying)", e.Instance, bounded(e.Err, 300))
}

func (e *NotSweptError) Unwrap() error { return e.Err }

type stage int

const (
	toSweep stage = iota
	toAdopt
	done
)

// entry is one instance's progress.
type entry struct {
	inst    sessions.Instance
	stage   stage
	tries   int       // failures of the current stage in a row
	next    time.Time // no attempt before
	err     error     // the last sweep failure
	open    chan struct{}
	attempt chan struct{} // closed when the running attempt ends; nil when none runs
	retried bool          // failed at least once
	firstIn bool          // its first attempt ended
}

// Worker is the start-up work of one gateway run.
type Worker struct {
	cfg    Config
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{}
	begun  time.Time

	mu         sync.Mutex
	stopped    bool
	listed     bool
	entries    map[string]*entry // by instance ID
	order      []*entry          // listing order (Wait's extras last)
	pending    int               // entries not done
	busy       int               // pooled attempts running
	ended      int               // processes the sweeps ended
	adopted    int
	retried    int
	gaveUp     int  // adoptions left to the first attach
	passLogged bool // the first-pass line is out
	firstIn    int  // entries whose first attempt ended (for the first-pass line)
}

// Start starts the work on the instances ctx bounds; Stop ends it.
func Start(ctx context.Context, cfg Config) *Worker {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = time.Second
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(cfg.MinBackoff, time.Minute)
	}
	if cfg.AdoptTries <= 0 {
		cfg.AdoptTries = 5
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Name != "" {
		cfg.Name += ": "
	}
	w := &Worker{cfg: cfg, log: log, wake: make(chan struct{}, 1), begun: time.Now(),
		entries: map[string]*entry{}}
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.wg.Go(w.run)
	return w
}

// Stop cancels the work and waits for it to end.
func (w *Worker) Stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
}

// Wait returns once inst's sweep is done, doing it now when it is still
// queued or waiting for a retry (one attempt per call: its error is a
// *NotSweptError). An instance that was not running when the Worker listed
// them has nothing of an earlier run to end.
func (w *Worker) Wait(ctx context.Context, inst sessions.Instance) error {
	w.mu.Lock()
	e := w.entries[inst.ID]
	if e == nil {
		if w.listed {
			w.mu.Unlock()
			return nil
		}
		e = w.add(inst) // the listing is not back yet: do it now
	}
	if isClosed(e.open) {
		w.mu.Unlock()
		return nil
	}
	if w.stopped {
		w.mu.Unlock()
		return ErrStopped
	}
	ch := e.attempt
	if ch == nil {
		ch = w.begin(e, false)
	}
	w.mu.Unlock()
	select {
	case <-e.open:
		return nil
	case <-ch:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the shells an earlier gateway run left in %q to end: %w", inst.Name, ctx.Err())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case isClosed(e.open):
		return nil
	case e.err != nil:
		return &NotSweptError{Instance: inst.Name, Err: e.err}
	}
	return ErrStopped // the attempt was cut short by Stop
}

// Swept reports whether every listed instance is swept (and adopted).
func (w *Worker) Swept() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.listed && w.pending == 0
}

// add records inst (w.mu held).
func (w *Worker) add(inst sessions.Instance) *entry {
	e := &entry{inst: inst, open: make(chan struct{})}
	w.entries[inst.ID] = e
	w.order = append(w.order, e)
	w.pending++
	return e
}

// begin starts an attempt at e (w.mu held, not stopped); pooled ones count
// against Workers.
func (w *Worker) begin(e *entry, pooled bool) chan struct{} {
	e.attempt = make(chan struct{})
	if pooled {
		w.busy++
	}
	w.wg.Go(func() { w.try(e, pooled) })
	return e.attempt
}

// run lists the instances, then hands out attempts until every instance
// is done or the Worker stops.
func (w *Worker) run() {
	list, ok := w.list()
	if !ok {
		return
	}
	w.mu.Lock()
	for _, inst := range list {
		if w.entries[inst.ID] == nil {
			w.add(inst)
		}
	}
	w.listed = true
	w.mu.Unlock()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, finished := w.dispatch()
		if finished {
			return
		}
		timer.Reset(next)
		select {
		case <-w.ctx.Done():
			return
		case <-w.wake:
		case <-timer.C:
		}
	}
}

// list lists the instances, retrying with backoff until it succeeds or
// the Worker stops.
func (w *Worker) list() ([]sessions.Instance, bool) {
	for tries := 1; ; tries++ {
		ctx, cancel := context.WithTimeout(w.ctx, w.cfg.Timeout)
		list, err := w.cfg.List(ctx)
		cancel()
		if err == nil {
			return list, true
		}
		if w.ctx.Err() != nil {
			return nil, false
		}
		level := slog.LevelDebug
		if tries == 1 || tries%10 == 0 {
			level = slog.LevelWarn
		}
		w.log.Log(w.ctx, level, w.cfg.Name+"could not list the instances to end an earlier run's shells in; retrying",
			"tries", tries, "err", bounded(err, 300))
		if !sleep(w.ctx, w.backoff(tries)) {
			return nil, false
		}
	}
}

// dispatch starts the attempts that are due, up to Workers, and says how
// long until the next retry is due; finished once nothing is left.
func (w *Worker) dispatch() (next time.Duration, finished bool) {
	var logLine func()
	defer func() {
		if logLine != nil {
			logLine()
		}
	}()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return 0, true
	}
	if w.pending == 0 && w.busy == 0 {
		logLine = w.summaryLine()
		return 0, true
	}
	now := time.Now()
	next = time.Hour
	for _, e := range w.order {
		if e.stage == done || e.attempt != nil {
			continue
		}
		if d := e.next.Sub(now); d > 0 {
			next = min(next, d)
			continue
		}
		if w.busy >= w.cfg.Workers {
			break // woken when one ends
		}
		w.begin(e, true)
	}
	if !w.passLogged && w.listed && w.pending > 0 && w.firstIn == len(w.order) {
		logLine = w.firstPass()
	}
	return next, false
}

// try makes one attempt at e's current stage and the next (the adoption
// after a sweep that succeeded).
func (w *Worker) try(e *entry, pooled bool) {
	defer func() {
		w.mu.Lock()
		close(e.attempt)
		e.attempt = nil
		if !e.firstIn {
			e.firstIn = true
			w.firstIn++
		}
		if pooled {
			w.busy--
		}
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}()
	if e.stage == toSweep && !w.sweep(e) {
		return
	}
	if e.stage == toAdopt {
		w.adopt(e)
	}
}

// sweep runs the sweep of e; true once it succeeded.
func (w *Worker) sweep(e *entry) bool {
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.Timeout)
	ended, err := w.cfg.Sweep(ctx, e.inst)
	cancel()
	if err != nil && w.ctx.Err() != nil {
		return false // stopping: not a failure of the instance
	}
	w.mu.Lock()
	tries := e.tries
	if err != nil {
		w.failed(e)
		e.err = err
		tries = e.tries
	} else {
		e.tries, e.err, e.next = 0, nil, time.Time{}
		w.ended += ended
		e.stage = toAdopt
		if w.cfg.Adopt == nil {
			w.finish(e)
		}
		close(e.open)
	}
	w.mu.Unlock()
	switch {
	case err != nil:
		w.logFailure(e.inst, tries, "ending the shells an earlier run left failed", err)
		return false
	case tries >= warnAfter:
		w.log.Info(w.cfg.Name+"ended the shells an earlier run left, after retries", "instance", e.inst.Name, "tries", tries+1)
	}
	return true
}

// adopt runs the adoption of e; given up after AdoptTries.
func (w *Worker) adopt(e *entry) {
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.Timeout)
	adopted, err := w.cfg.Adopt(ctx, e.inst)
	cancel()
	if err != nil && w.ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	if err != nil {
		w.failed(e)
	}
	tries, giveUp := e.tries, err != nil && e.tries >= w.cfg.AdoptTries
	switch {
	case giveUp:
		w.gaveUp++
		w.finish(e)
	case err == nil:
		if adopted {
			w.adopted++
		}
		w.finish(e)
	}
	w.mu.Unlock()
	switch {
	case giveUp:
		w.log.Warn(w.cfg.Name+"could not adopt the held session; it is adopted at its first attach",
			"instance", e.inst.Name, "tries", tries, "err", bounded(err, 300))
	case err != nil:
		w.logFailure(e.inst, tries, "adopting the held session failed", err)
	}
}

// failed counts a failure of e's stage and schedules the retry (w.mu held).
func (w *Worker) failed(e *entry) {
	e.tries++
	e.next = time.Now().Add(w.backoff(e.tries))
	if !e.retried {
		e.retried = true
		w.retried++
	}
}

func (w *Worker) finish(e *entry) {
	e.stage = done
	w.pending--
}

// warnAfter is how many failures in a row of one instance are logged at
// debug only: one engine hiccup must not log a line per instance.
const warnAfter = 3

// logFailure logs the tries-th failure in a row at inst, bounded.
func (w *Worker) logFailure(inst sessions.Instance, tries int, msg string, err error) {
	level := slog.LevelDebug
	if tries == warnAfter || tries%20 == 0 {
		level = slog.LevelWarn
	}
	w.log.Log(w.ctx, level, w.cfg.Name+msg+"; retrying in the background",
		"instance", inst.Name, "tries", tries, "retry_in", w.backoff(tries).String(), "err", bounded(err, 300))
}

// firstPass says, once, how many instances are still to do after every
// instance had its first attempt, naming a few (w.mu held; the caller
// logs after unlocking).
func (w *Worker) firstPass() func() {
	w.passLogged = true
	var names []string
	n := 0
	for _, e := range w.order {
		if e.stage != done {
			n++
			if len(names) < 5 {
				names = append(names, e.inst.Name)
			}
		}
	}
	args := []any{"instances", len(w.order), "not_done", n, "first", names, "processes_ended", w.ended,
		"elapsed", time.Since(w.begun).Round(time.Millisecond).String()}
	return func() {
		w.log.Warn(w.cfg.Name+"start-up: some instances are not done yet; retrying them in the background", args...)
	}
}

// summaryLine is the one line when everything is done (w.mu held; the
// caller logs after unlocking).
func (w *Worker) summaryLine() func() {
	args := []any{"instances", len(w.order), "processes_ended", w.ended, "adopted", w.adopted,
		"adoptions_left_to_attach", w.gaveUp, "retried", w.retried,
		"duration", time.Since(w.begun).Round(time.Millisecond).String()}
	return func() {
		w.log.Info(w.cfg.Name+"start-up sweep done: the shells an earlier run left are ended", args...)
	}
}

func (w *Worker) backoff(tries int) time.Duration {
	d := w.cfg.MinBackoff
	for i := 1; i < tries && d < w.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, w.cfg.MaxBackoff)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// bounded is err's text cut to n bytes: an instance's stderr may be long.
func bounded(err error, n int) string {
	s := err.Error()
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
