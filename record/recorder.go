package record

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/termgate/termgate/sessions"
	"golang.org/x/sys/unix"
)

// Config configures a Recorder; New fills in the defaults.
type Config struct {
	// Dir is the recording directory (created 0700 when missing).
	Dir string
	// QueueBytes is how much output may wait for the disk per recording
	// before output is dropped (default 8 MiB: seconds of a shell printing
	// flat out).
	QueueBytes int
	Logger     *slog.Logger
	// MaxBytes cuts a recording that reaches this size (--record-max-size):
	// an "m" event says so and the file is closed; the session goes on
	// unrecorded. 0: unlimited.
	MaxBytes int64
	// MaxTotal bounds what all recordings in Dir hold together
	// (--record-max-total; see budget.go): a recording that would pass it
	// is cut like one that reaches MaxBytes, and no new one starts while
	// the directory is full. 0: unlimited.
	MaxTotal int64
	// Input records what clients write to the shell as "i" events
	// (--record-input). Off by default: input holds passwords.
	Input bool
	// Now is the clock of the timestamps (default time.Now).
	Now func() time.Time

	// create opens a recording's file (default: create under Dir); unit
	// tests replace it with a slow disk.
	create func(instance, name string) (file, error)
	// move moves a recording to another instance's directory when its
	// instance is renamed (see moveFile); nil with a replaced create: the
	// file stays.
	move func(from, to, name string) error
	// appendTo opens a held session's existing recording to continue it
	// (see appendTo); nil with a replaced create: always a new file.
	appendTo func(instance, name string) (file, tail, error)
}

// file is what a recording writes to.
type file interface {
	io.Writer
	Sync() error
	Close() error
}

// Recorder makes a Recording of every session (see Observe) and owns their
// goroutines.
type Recorder struct {
	cfg   Config
	dirFD int

	mu     sync.Mutex // guards live, last and closed
	live   map[*Recording]struct{}
	last   map[string]*Recording // the latest recording of each session, by file name (SESSION.cast: renames keep it)
	closed bool
	wg     sync.WaitGroup // one per recording goroutine
	budget budget         // the directory's use (MaxTotal)
}

// New opens (creating it when missing) the recording directory.
func New(cfg Config) (*Recorder, error) {
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = 8 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Recorder{cfg: cfg, dirFD: -1, live: map[*Recording]struct{}{}, last: map[string]*Recording{}}
	r.measure()
	if r.cfg.create == nil {
		fd, err := openDir(cfg.Dir)
		if err != nil {
			return nil, err
		}
		r.dirFD = fd
		r.cfg.create = func(instance, name string) (file, error) { return create(fd, cfg.Dir, instance, name) }
		r.cfg.move = func(from, to, name string) error { return moveFile(fd, cfg.Dir, from, to, name) }
		r.cfg.appendTo = func(instance, name string) (file, tail, error) {
			return appendTo(fd, cfg.Dir, instance, name, r.cfg.Now())
		}
	}
	return r, nil
}

// Observe is the sessions.Config.Observe hook: it starts the session's
// recording. It does no I/O (the file is created by the recording's own
// goroutine), so a slow disk never delays a session's start.
func (r *Recorder) Observe(s sessions.ObservedSession) sessions.Observer {
	rec := r.Start(s)
	if rec == nil {
		return nil // not a typed nil: sessions checks for none
	}
	return rec
}

// Start starts recording a session; nil once the Recorder is closed or
// when the session's names cannot be file names.
func (r *Recorder) Start(s sessions.ObservedSession) *Recording {
	log := r.cfg.Logger.With("instance", s.Instance, "session", sessions.ShortID(s.Session))
	if err := checkName(s.Instance); err != nil {
		log.Error("session not recorded", "err", err)
		return nil
	}
	if err := checkName(s.Session); err != nil {
		log.Error("session not recorded", "err", err)
		return nil
	}
	if r.full() {
		log.Warn("session not recorded: the recordings have used up --record-max-total; remove old ones", "max_total", r.cfg.MaxTotal)
		return nil
	}
	name := s.Session + ".cast"
	now := r.cfg.Now()
	h := Header{Version: 2, Width: s.Size.Cols, Height: s.Size.Rows, Timestamp: now.Unix(), Title: sessions.Addr{Instance: s.Instance, Name: s.Name}.String()}
	if s.Term != "" {
		h.Env = map[string]string{"TERM": s.Term}
	}
	line, _ := json.Marshal(h) // plain fields: never fails
	rec := &Recording{
		r: r, instance: s.Instance, file: name,
		name:   filepath.ToSlash(filepath.Join(s.Instance, name)),
		cur:    filepath.ToSlash(filepath.Join(s.Instance, name)),
		log:    log.With("recording", filepath.Join(s.Instance, name)),
		start:  now,
		header: append(line, '\n'),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		held:   s.Held, offset: s.Offset, replay: s.Replay, size: s.Size,
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	// The session's previous recording in this gateway (before the
	// connection to its holder broke, say) may still be writing: this one
	// continues its file once it is done.
	if prev := r.last[rec.file]; prev != nil {
		rec.prev = prev.done
	}
	r.last[rec.file] = rec
	r.live[rec] = struct{}{}
	r.wg.Add(1)
	go rec.run()
	return rec
}

func (r *Recorder) ended(rec *Recording) {
	r.mu.Lock()
	delete(r.live, rec)
	if r.last[rec.file] == rec {
		delete(r.last, rec.file)
	}
	r.mu.Unlock()
	close(rec.done)
	r.wg.Done()
}

// Close ends every recording still going (their sessions normally ended
// them already), waits until each has written, synced and closed its file,
// and refuses new ones. It returns ctx.Err() if that takes longer than ctx
// allows (a disk that does not answer); the directory stays open then.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	live := make([]*Recording, 0, len(r.live))
	for rec := range r.live {
		live = append(live, rec)
	}
	r.mu.Unlock()
	for _, rec := range live {
		rec.Close()
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.dirFD >= 0 {
		unix.Close(r.dirFD)
		r.dirFD = -1
	}
	return nil
}
