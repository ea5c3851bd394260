package websock

import (
	"errors"
	"fmt"
	"time"

	"github.com/termgate/termgate/sessions"
)

// errTokenRemoved is the reason a connection whose token left the token
// file is disconnected (the user reads it in the error event).
var errTokenRemoved = errors.New("the token of this connection was removed from the gateway's token file")

// allowedFor is a connection's sessions.AttachOptions.Allowed: the token
// behind the caller's credential (the bearer token, or the token a login
// cookie names) must still be in the token file, and its instances= limits
// must still allow the instance. The registry asks it on every attach (so
// a reset never carries a revoked connection into the fresh shell) and on
// Registry.Recheck, which cmd/termgate calls after every reload.
func (s *Server) allowedFor(c caller) func(instance string) error {
	if c.signin != nil {
		si, id := *c.signin, c.id
		s.signins.attached(si.ID, si.Expires)
		return func(instance string) error {
			if err := s.signins.check(si, time.Now()); err != nil {
				return err
			}
			if !id.May(instance) {
				return fmt.Errorf("%s may no longer use instance %q", id.Name, instance)
			}
			return nil
		}
	}
	hash := c.tokenHash
	return func(instance string) error {
		id, ok := s.cfg.Tokens.CheckHash(hash)
		if !ok {
			return errTokenRemoved
		}
		if !id.May(instance) {
			return fmt.Errorf("token %q may no longer use instance %q", id.Name, instance)
		}
		return nil
	}
}

// revokedNow asks the attach's Allowed before a control acts (reset, pin,
// grant), so a connection whose credential was revoked acts on nothing
// even before the reload's Recheck has closed it; a refusal closes it.
func (c *conn) revokedNow() bool {
	if c.allowed == nil {
		return false
	}
	if err := c.allowed(instanceOf(c.name)); err != nil {
		c.revoked(&sessions.RevokedError{Reason: err.Error()})
		return true
	}
	return false
}
