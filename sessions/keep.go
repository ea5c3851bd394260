package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// A keep (ssh HOST keep INSTANCE 8h; issue 23 item 5) postpones idle
// reaping: a session with no client is reaped at the later of its idle
// timeout and its keep, which Config.MaxKeep bounds. It lasts for that
// session (a reset's fresh one has none). A held session's holder owns its
// idle timer, so for it the gateway counts one more client until the
// keep's end less the idle timeout: the holder then reaps it at about the
// keep's end. That part lasts only while this gateway runs.

// KeepTooLongError refuses a keep over Config.MaxKeep.
type KeepTooLongError struct{ Asked, Max time.Duration }

func (e *KeepTooLongError) Error() string {
	return fmt.Sprintf("keep %s is longer than the gateway allows (--max-keep %s)", e.Asked, e.Max)
}

// Keep keeps the instance's session from being reaped for d with no client
// (0: end the keep, the idle timeout alone applies). It returns the keep's
// end.
func (r *Registry) Keep(ctx context.Context, name string, d time.Duration) (time.Time, error) {
	if err := checkKeep(d, r.cfg.MaxKeep); err != nil {
		return time.Time{}, err // before the lookup: a bad keep costs no backend call
	}
	s, err := r.sessionOf(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	return s.keep(d)
}

// Keep keeps the client's session (the page's control), as Registry.Keep.
func (c *Client) Keep(d time.Duration) (time.Time, error) {
	if c.who.ReadOnly {
		return time.Time{}, ErrReadOnly
	}
	s, _ := c.session()
	return s.keep(d)
}

// checkKeep bounds a keep's duration.
func checkKeep(d, max time.Duration) error {
	if d < 0 {
		return errors.New("a keep cannot be negative")
	}
	if d > max {
		return &KeepTooLongError{Asked: d, Max: max}
	}
	return nil
}

func (s *Session) keep(d time.Duration) (time.Time, error) {
	if err := checkKeep(d, s.cfg.MaxKeep); err != nil {
		return time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateRunning {
		return time.Time{}, ErrNoSession
	}
	s.reap.keepUntil = time.Time{}
	if d > 0 {
		s.reap.keepUntil = s.clock.Now().Add(d)
	}
	s.armIdleLocked()
	if s.held != nil {
		s.armHeldKeepLocked()
		s.held.Clients(s.heldClientsLocked())
	}
	s.publishLocked()
	s.log.Info("session kept", "keep", d.String())
	return s.reap.keepUntil, nil
}

// reapAtLocked is when an idle session is reaped: the later of its idle
// timeout and its keep. Called with mu held, while idle.
func (s *Session) reapAtLocked() time.Time {
	at := s.reap.idleSince.Add(s.cfg.IdleTimeout)
	if s.reap.keepUntil.After(at) {
		return s.reap.keepUntil
	}
	return at
}

// heldKeepingLocked: a held session's keep still needs the holder to see
// a client, so that its idle timer starts no earlier than the keep's end
// less the idle timeout.
func (s *Session) heldKeepingLocked() bool {
	return !s.reap.keepUntil.IsZero() && s.clock.Now().Before(s.reap.keepUntil.Add(-s.cfg.IdleTimeout))
}

// heldClientsLocked is the count a held session's holder is told.
func (s *Session) heldClientsLocked() int {
	if len(s.clients) == 0 && s.state == stateRunning && s.heldKeepingLocked() {
		return 1
	}
	return len(s.clients)
}

// armHeldKeepLocked tells the holder the real count once the keep no
// longer needs the extra one.
func (s *Session) armHeldKeepLocked() {
	if s.reap.keepTimer != nil {
		s.reap.keepTimer.Stop()
		s.reap.keepTimer = nil
	}
	if !s.heldKeepingLocked() {
		return
	}
	var t clockwork.Timer
	t = s.clock.AfterFunc(s.reap.keepUntil.Add(-s.cfg.IdleTimeout).Sub(s.clock.Now()), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.reap.keepTimer == t && s.state == stateRunning {
			s.reap.keepTimer = nil
			s.held.Clients(s.heldClientsLocked())
		}
	})
	s.reap.keepTimer = t
}
