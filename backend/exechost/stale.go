package exechost

import (
	"errors"
	"fmt"

	"github.com/termgate/termgate/sessions"
)

// heldStartErr is the error of a start whose handshake failed. When the
// start found a live holder ("already held": it holds the lock) that does
// not answer on its socket, the socket was deleted under it (a tmp
// cleaner: issue 20, D3). That is not "not held": the registry would then
// start again, into the same lock, and an attach would go round without an
// answer. The holder puts its socket back within seconds (holder's
// relisten.go), so the user is told to try again.
func heldStartErr(inst sessions.Instance, outcome serveOutcome, sock string, err error) error {
	if outcome == serveHeld && errors.Is(err, sessions.ErrNotHeld) {
		return fmt.Errorf("start a held session in %q: a holder holds %s but does not answer on it (the socket was deleted inside the instance?); it listens there again within seconds: try again shortly", inst.Name, sock)
	}
	return fmt.Errorf("start a held session in %q: %w", inst.Name, err)
}
