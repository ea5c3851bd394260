package sessions

import (
	"errors"
	"fmt"
)

// A paused instance (docker pause, and docker commit, which pauses while
// it copies the filesystem) is not a stopped one: its processes are
// frozen, not gone, and carry on when it is unpaused. So its session is
// kept: the exec streams and a holder survive the freeze. Meanwhile:
//
//   - attached clients are told, in band (a *Notice from Take), once when
//     the instance pauses and once when it runs again;
//   - Lookup fails with ErrPaused, so a new attach or a reset is refused
//     with a message that says so (a shell cannot be started, nor one
//     killed, in a frozen instance; a reset would leave two shells);
//   - a kill that fails (an idle reap, a shutdown) is not taken for done:
//     the instance is not gone, so kill.go retries it, at once when the
//     instance is unpaused (the registry fires reachable).

// ErrPaused: the instance is paused. Backends wrap it in Lookup.
var ErrPaused = errors.New("paused")

// PausedMessage is the user-facing text for ErrPaused.
func PausedMessage(name string) string {
	return fmt.Sprintf("instance %q is paused; try again once it is unpaused", name)
}

// Notice is an in-band message for a client (SSH: a [termgate] line;
// WebSocket: an error event): Take returns it between the output before
// and after it. It is not final: the client stays attached.
type Notice struct {
	Message string
}

func (n *Notice) String() string { return n.Message }

// The notices a paused and an unpaused instance give.
var (
	noticePaused   = &Notice{Message: "instance paused: the session is kept; output and input resume when it is unpaused"}
	noticeUnpaused = &Notice{Message: "instance unpaused: the session carries on"}
)

// setPaused records that the instance was paused (or runs again) and
// tells the attached clients, once per change.
func (s *Session) setPaused(paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused == paused || s.state != stateRunning {
		return
	}
	s.paused = paused
	n := noticeUnpaused
	if paused {
		n = noticePaused
		s.log.Info("instance paused; session kept")
	} else {
		s.log.Info("instance unpaused; session carries on")
	}
	for c := range s.clients {
		c.notify(n)
	}
}

// notify queues n in band. Called with Session.mu held.
func (c *Client) notify(n *Notice) { c.notifyEvent(n) }

// notifyEvent queues an in-band event (a *Notice, a *Resized). Called
// with Session.mu or presence's lock held (its events keep their order).
func (c *Client) notifyEvent(n Event) {
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, []byte{}) // the event's place
	c.events = append(c.events, n)
	c.mu.Unlock()
	c.signal()
}

// pauseEvent applies a pause or an unpause to the instance's sessions.
func (r *Registry) pauseEvent(ev InstanceEvent) {
	if ev.Unpaused {
		r.cfg.reachable.fire() // kills that failed while it was frozen
	}
	r.mu.Lock()
	slots := r.instanceSlotsLocked(ev.Instance.ID)
	r.mu.Unlock()
	for _, sl := range slots {
		if !sl.ended() || sl.sess == nil {
			continue // still starting: a start in a frozen instance fails by itself
		}
		sl.sess.setPaused(ev.Paused)
	}
}
