package exechost

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/termgate/termgate/sessions"
)

// Logins (CONTRACT.md "Named sessions and logins") go through the holder
// binary on every backend, the same way: Kubernetes' exec has no user
// field, and one mechanism is one to test. A start, command or transfer
// as a login first runs the "login LOGIN" tool, which becomes the user and
// says so (a missing user, or an instance that cannot change user, is
// refused there and nothing starts); the shell or command then runs as
// "as LOGIN -- ARGV" from the directory that tool ran from, the SFTP
// server as "sftp --login LOGIN", a held shell as "serve --login LOGIN".

// checkLogin runs the login tool: nil when inst can run as login, a
// *sessions.LoginError when it cannot (what the user reads), another
// error when the instance could not be asked.
func (h *Host) checkLogin(ctx context.Context, inst sessions.Instance, login string) error {
	s, err := h.runTool(ctx, inst, "login", login)
	if err == nil {
		return s.Close()
	}
	var cannot *CannotHold
	switch {
	case errors.As(err, &cannot):
		return &sessions.LoginError{Login: login, Why: fmt.Sprintf(
			"login refused: running as %q needs termgate's helper in instance %q, which cannot run there (%s); connect without LOGIN@ to use the instance's default user",
			login, inst.Name, cannot.Why)}
	case ctx.Err() != nil || errors.Is(err, sessions.ErrNotFound) || errors.Is(err, ErrNoStatus):
		return err
	}
	// The tool ran and refused: its own sentence (runToolIn quotes its
	// stderr after "login in INSTANCE: ").
	msg := err.Error()
	if i := strings.Index(msg, "login refused: "); i >= 0 {
		msg = msg[i:]
	} else {
		msg = "login refused: " + msg
	}
	return &sessions.LoginError{Login: login, Why: msg}
}

// asCommand is argv run as login, through the holder binary in the
// directory the last tool ran from: call it right after checkLogin.
func (h *Host) asCommand(ctx context.Context, inst sessions.Instance, login string, argv []string) ([]string, error) {
	dir := h.site.get(&h.site.worked, inst.ID)
	if dir == "" {
		return nil, fmt.Errorf("run as %q in %q: the helper's directory is not known; try again", login, inst.Name)
	}
	args := append([]string{"as", login, "--"}, argv...)
	shell, err := h.hasShell(ctx, inst)
	if err != nil {
		return nil, err
	}
	if shell {
		return h.toolCommand(ctx, inst, dir, args)
	}
	return h.toolCommandNoShell(ctx, inst, dir, args)
}

// loginArgv is argv as login ("" argv itself), checked first.
func (h *Host) loginArgv(ctx context.Context, inst sessions.Instance, login string, argv []string) ([]string, error) {
	if login == "" {
		return argv, nil
	}
	if err := h.checkLogin(ctx, inst, login); err != nil {
		return nil, err
	}
	return h.asCommand(ctx, inst, login, argv)
}
