package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/termgate/termgate/record"
	"github.com/termgate/termgate/sessions"
)

// newRecorder opens --record-dir; nil (no recordings) without it.
func newRecorder(o *options, log *slog.Logger) (*gatewayRecorder, error) {
	if o.recordDir == "" {
		return nil, nil
	}
	r, err := record.New(record.Config{Dir: o.recordDir, Logger: log, Input: o.recordInput})
	if err != nil {
		return nil, err
	}
	log.Info("recording every session", "record_dir", o.recordDir, "record_input", o.recordInput)
	return &gatewayRecorder{r}, nil
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
