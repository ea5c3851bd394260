package local

import (
	"fmt"

	"github.com/termgate/termgate/sessions"
)

// noLogins refuses a login: the local backend runs everything as the
// gateway's own user, and never as another (it would have to be root).
func noLogins(login string) error {
	if login == "" {
		return nil
	}
	return &sessions.LoginError{Login: login, Why: fmt.Sprintf("login refused: the local backend runs everything as the gateway's own user and cannot be %q; connect without LOGIN@", login)}
}
