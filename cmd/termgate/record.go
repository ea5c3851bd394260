package main

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/termgate/termgate/record"
	"github.com/termgate/termgate/sessions"
)

// newRecorder opens --record-dir; nil (no recordings) without it.
func newRecorder(o *options, log *slog.Logger) (*gatewayRecorder, error) {
	if o.recordDir == "" {
		return nil, nil
	}
	r, err := record.New(record.Config{Dir: o.recordDir, Logger: log, Input: o.recordInput, MaxBytes: o.recordMaxSize, MaxTotal: o.recordMaxTotal})
	if err != nil {
		return nil, err
	}
	log.Info("recording every session", "record_dir", o.recordDir, "record_input", o.recordInput, "record_max_size", o.recordMaxSize, "record_max_total", o.recordMaxTotal)
	warnUnbounded(o, log)
	return &gatewayRecorder{r}, nil
}

// Defaults of the recording limits: a session printing flat out writes
// tens of MB a second, so unbounded recordings let one instance fill the
// gateway's disk (issue 18, L3).
const (
	defaultRecordMaxSize  = "100MiB"
	defaultRecordMaxTotal = "10GiB"
)

// warnUnbounded says at start that a recording limit is off.
func warnUnbounded(o *options, log *slog.Logger) {
	if o.recordMaxSize == 0 {
		log.Warn("recordings are unbounded: --record-max-size 0 lets one session's recording fill the disk of --record-dir", "record_dir", o.recordDir)
	}
	if o.recordMaxTotal == 0 {
		log.Warn("recordings are unbounded: --record-max-total 0 lets the recordings together fill the disk of --record-dir", "record_dir", o.recordDir)
	}
}

type gatewayRecorder struct{ *record.Recorder }

// observe is the sessions.Config.Observe hook, nil without recordings.
func (g *gatewayRecorder) observe() func(sessions.ObservedSession) sessions.Observer {
	if g == nil {
		return nil
	}
	return g.Observe
}

// recorderCloseTimeout bounds the wait for the last recordings to reach
// the disk once every session has ended.
const recorderCloseTimeout = 5 * time.Second

// closeRecorder runs after the sessions ended: it waits for their
// recordings to be written, synced and closed.
func closeRecorder(g *gatewayRecorder, log *slog.Logger) {
	if g == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), recorderCloseTimeout)
	defer cancel()
	if err := g.Close(ctx); err != nil {
		log.Error("recordings not all written before exit", "err", err)
	}
}

// parseRecordSize reads --record-max-size: "0" (unlimited), bytes, or a
// KiB/MiB/GiB suffix (KB/MB/GB and K/M/G are read as binary too).
func parseRecordSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(strings.ToUpper(t), u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<50)/mult {
		return 0, errors.New("is not a size: use bytes or a KiB/MiB/GiB suffix, e.g. 512MiB (0: unlimited)")
	}
	if n > 0 && n*mult < 4<<10 {
		return 0, errors.New("is too small: at least 4KiB (0: unlimited)")
	}
	return n * mult, nil
}
