package sshd

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/sessions"
)

// Why a command, transfer or forward ends under its client: the words
// of the shell's notices ("gateway is shutting down; session ended",
// "instance stopped; session ended": sessions.ErrShutdown,
// ErrInstanceGone), with what ended instead of "session".
const (
	whyShutdown     = "gateway is shutting down"
	whyInstanceGone = "instance stopped"
)

// endedNotice is the stderr line a client of a cut command or transfer
// reads before its exit status: "[termgate] instance stopped; transfer
// ended".
func endedNotice(why, what string) string {
	return "[termgate] " + why + "; " + what + " ended"
}

// cutAtShutdown ends every running command, transfer and forward as the
// gateway shuts down (Shutdown), each telling its client why where the
// protocol can; ops begun afterwards are refused (beginRemote).
func (s *Server) cutAtShutdown() {
	r := &s.remote
	r.mu.Lock()
	r.closing = true
	r.drainedLocked()
	ops := make([]*remoteOp, 0, len(r.ops))
	for op := range r.ops {
		ops = append(ops, op)
	}
	r.mu.Unlock()
	for _, op := range ops {
		op.cut(whyShutdown)
	}
}

// instanceGoneWait bounds how long an ended stream's instance is watched
// for its stop: the engine reports it a moment after the streams end.
const instanceGoneWait = 3 * time.Second

// instanceGone reports whether the instance name stopped (or went away),
// asked until instanceGoneWait has passed or ctx ends.
func (s *Server) instanceGone(ctx context.Context, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, instanceGoneWait)
	defer cancel()
	for {
		_, err := s.cfg.Registry.Lookup(ctx, name)
		if errors.Is(err, sessions.ErrNotFound) {
			return true
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// logCut is the INFO line of a command, transfer or forward ended by a
// shutdown or its instance's stop: one per op, with bounded fields (log
// carries who).
func logCut(log *slog.Logger, kind string, w audit.Who, instance, why string, in, out int64, began time.Time) {
	log.Info(kind+" ended: "+why, "key", w.Key, "instance", clip(instance, 128),
		"bytes_in", in, "bytes_out", out, "duration", time.Since(began).Round(time.Millisecond))
}
