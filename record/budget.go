package record

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
)

// Recordings are bounded twice (issue 18, L3: one instance printing flat
// out wrote 23 MB/s): each file by Config.MaxBytes (--record-max-size),
// and the directory as a whole by Config.MaxTotal (--record-max-total):
// what its recordings hold, counted once at start and then as each line is
// written. A recording that would pass either is cut with a marker saying
// which; with the directory full, new sessions are not recorded (the log
// says so) until files are removed: the directory is measured again then,
// at most every budgetRescan.

// budgetRescan bounds how often a full directory is measured again.
const budgetRescan = 10 * time.Second

// budget is the directory's use, shared by a Recorder's recordings.
type budget struct {
	used     atomic.Int64
	lastScan atomic.Int64 // UnixNano of the last measurement
}

// dirSize is what the recordings under dir hold: the regular files of its
// instance directories (links and anything deeper are not followed).
func dirSize(dir string) int64 {
	var n int64
	insts, _ := os.ReadDir(dir)
	for _, i := range insts {
		if !i.IsDir() {
			continue
		}
		files, _ := os.ReadDir(filepath.Join(dir, i.Name()))
		for _, f := range files {
			if !f.Type().IsRegular() {
				continue
			}
			if fi, err := f.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

// measure counts the directory's use again.
func (r *Recorder) measure() {
	if r.cfg.MaxTotal <= 0 || r.cfg.Dir == "" {
		return
	}
	r.budget.used.Store(dirSize(r.cfg.Dir))
	r.budget.lastScan.Store(r.cfg.Now().UnixNano())
}

// full reports whether the directory's budget is used up, measuring it
// again first when files may have been removed since.
func (r *Recorder) full() bool {
	total := r.cfg.MaxTotal
	if total <= 0 || r.budget.used.Load() < total {
		return false
	}
	if last := r.budget.lastScan.Load(); r.cfg.Now().Sub(time.Unix(0, last)) >= budgetRescan {
		r.measure()
	}
	return r.budget.used.Load() >= total
}

// overBudget reports whether writing n more bytes to a file of written
// bytes passes a limit; when not, the n bytes are counted as written.
func (rec *Recording) overBudget(written int64, n int) bool {
	if max := rec.r.cfg.MaxBytes; max > 0 && written+int64(n) > max {
		rec.cutBy = "--record-max-size " + strconv.FormatInt(max, 10)
		return true
	}
	if total := rec.r.cfg.MaxTotal; total > 0 {
		if rec.r.budget.used.Add(int64(n)) > total {
			rec.r.budget.used.Add(-int64(n))
			rec.cutBy = "--record-max-total " + strconv.FormatInt(total, 10) + " for all recordings"
			return true
		}
	}
	return false
}
