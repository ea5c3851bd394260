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
		// Taken before the attempt: the backend coming back while it
		// fails is a reason to try again at once.
		reachable := s.cfg.reachable.wait()
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
		t := s.clock.NewTimer(wait)
		select {
		case <-t.Chan():
		case <-reachable:
			t.Stop()
			s.log.Info("backend reachable again; retrying kill now")
		case <-s.cfg.stop:
			t.Stop()
			s.log.Error("gateway stopping with session processes possibly alive", "err", err)
			return
		}
		wait = min(wait*2, killRetryMax)
	}
}
