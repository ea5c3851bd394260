package keys

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultInterval is how often a store checks its file when
// Config.Interval is zero.
const DefaultInterval = time.Second

// Config configures a KeyStore or a TokenStore.
type Config struct {
	// Path is the file to load and watch (required).
	Path string
	// Logger receives reloads, warnings and failures; nil discards them.
	Logger *slog.Logger
	// Interval is how often the file is checked for changes: zero means
	// DefaultInterval, a negative value turns polling off (Reload only).
	Interval time.Duration
	// OnReload, when set, is called after every successful reload (by a
	// poll or Reload), outside the store's lock: the gateway re-checks
	// attached clients against the new credentials there, so a removed
	// key or token loses its live sessions too.
	OnReload func()
}

// watched holds the current value parsed from a file and reloads it when the
// file changes (polled) or on reload(). It is shared by KeyStore and
// TokenStore.
type watched[T any] struct {
	path     string
	what     string // for logs: "authorized keys", "API tokens"
	load     func(path string) (*T, []string, error)
	count    func(*T) int // entries, for logs
	log      *slog.Logger
	interval time.Duration
	onReload func()

	cur atomic.Pointer[T]

	mu      sync.Mutex // serializes loads; guards stamp and lastErr
	stamp   fileStamp  // of the file the current value came from
	lastErr string     // last failure logged, to log each failure once

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// start loads the file once (an error is returned, not logged) and starts
// polling.
func (w *watched[T]) start(cfg Config, what string, load func(string) (*T, []string, error), count func(*T) int) error {
	if cfg.Path == "" {
		return errors.New(what + ": no file path configured")
	}
	w.path, w.what, w.load, w.count = cfg.Path, what, load, count
	w.log = cfg.Logger
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.log = w.log.With("file", cfg.Path)
	w.interval = cfg.Interval
	w.onReload = cfg.OnReload
	if w.interval == 0 {
		w.interval = DefaultInterval
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	if err := w.reload(false); err != nil {
		return err
	}
	if w.interval < 0 {
		close(w.done)
		return nil
	}
	go w.poll()
	return nil
}

// poll reloads whenever the file's stamp differs from the loaded one (or the
// last load failed), until close.
func (w *watched[T]) poll() {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		w.mu.Lock()
		changed := !w.stamp.equal(statFile(w.path))
		w.mu.Unlock()
		if changed {
			_ = w.reload(true) // logged by reload
		}
	}
}

// reload loads the file and, on success, makes it current. On failure the
// previous value stays current and the error is logged (once per distinct
// error) when logFailure is set.
func (w *watched[T]) reload(logFailure bool) error {
	initial, err := w.load1(logFailure)
	if err == nil && !initial && w.onReload != nil {
		w.onReload()
	}
	return err
}

func (w *watched[T]) load1(logFailure bool) (initial bool, _ error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := statFile(w.path) // before reading: a change during the read is seen by the next poll
	v, warnings, err := w.load(w.path)
	if err != nil {
		w.stamp = fileStamp{} // retry at the next poll
		if logFailure && err.Error() != w.lastErr {
			w.log.Error("reload failed; keeping the previous "+w.what, "err", err)
		}
		w.lastErr = err.Error()
		return false, err
	}
	initial = w.cur.Load() == nil
	w.cur.Store(v)
	w.stamp, w.lastErr = st, ""
	for _, warning := range warnings {
		w.log.Warn(w.what + ": " + warning)
	}
	verb := "reloaded "
	if initial {
		verb = "loaded "
	}
	w.log.Info(verb+w.what, "entries", w.count(v), "warnings", len(warnings))
	return initial, nil
}

// close stops polling and waits for the goroutine. It is idempotent.
func (w *watched[T]) close() {
	w.closeOnce.Do(func() { close(w.stop) })
	<-w.done
}

// fileStamp identifies one version of a file without reading it.
type fileStamp struct {
	known bool        // false: never loaded, or the last load failed
	info  os.FileInfo // nil: the file did not exist
}

func statFile(path string) fileStamp {
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		return fileStamp{known: true, info: fi}
	case errors.Is(err, fs.ErrNotExist):
		return fileStamp{known: true}
	default:
		return fileStamp{}
	}
}

func (a fileStamp) equal(b fileStamp) bool {
	if !a.known || !b.known {
		return false
	}
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return os.SameFile(a.info, b.info) &&
		a.info.Size() == b.info.Size() &&
		a.info.ModTime().Equal(b.info.ModTime()) &&
		a.info.Mode() == b.info.Mode()
}
