package sessions

import (
	"context"
	"time"
)

// Backoff between kill attempts while the backend fails them (an engine
// restarting, say): the shell may still be running, so the session stays
// in place, and no second shell starts in the instance, until a kill
// succeeds or the instance is gone.
const (
	killRetryFirst = 500 * time.Millisecond
	killRetryMax   = 15 * time.Second
)

// kill ends the session's processes, retrying failed attempts. It gives up
// only when the instance is gone (its processes went with it) or the
// registry stops for good.
func (s *Session) kill() {
	wait := killRetryFirst
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.KillTimeout)
		err := s.proc.Kill(ctx)
		cancel()
		if err == nil {
			if attempt > 1 {
				s.log.Info("killed session processes after retrying", "attempts", attempt)
			}
			s.killFailed.Store(false)
			return
		}
		s.killFailed.Store(true)
		ctx, cancel = context.WithTimeout(context.Background(), s.cfg.KillTimeout)
		gone := s.instanceGone(ctx)
		cancel()
		if gone {
			s.log.Info("instance gone; its processes ended with it", "kill_err", err)
			s.killFailed.Store(false)
			return
		}
		s.log.Warn("kill session processes failed; retrying", "err", err, "attempt", attempt, "retry_in", wait.String())
		select {
		case <-s.clock.After(wait):
		case <-s.cfg.stop:
			s.log.Error("gateway stopping with session processes possibly alive", "err", err)
			return
		}
		wait = min(wait*2, killRetryMax)
	}
}
