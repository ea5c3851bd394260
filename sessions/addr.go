package sessions

import (
	"errors"
	"fmt"
	"strings"

	"github.com/termgate/termgate/internal/names"
)

// Named sessions (CONTRACT.md "Named sessions and logins"): an instance
// has its default session, whose name is "", and up to
// Config.MaxPerInstance-1 named ones, each a session in every sense. The
// registry's methods that act on one session (Attach, Reset, Keep, Size,
// PinSize, Who, RaiseHand, Grant, Since) take its address as users write
// it: INSTANCE for the default session, INSTANCE+NAME for a named one. An
// instance name never holds '+', so the address is unambiguous.

// ErrBadSessionName: a session name outside the contract's syntax.
var ErrBadSessionName = errors.New("invalid session name")

// Addr names one session: its instance and its name there ("" is the
// instance's default session).
type Addr struct {
	Instance, Name string
}

// String is the address as users write it: INSTANCE or INSTANCE+NAME.
func (a Addr) String() string {
	if a.Name == "" {
		return a.Instance
	}
	return a.Instance + "+" + a.Name
}

// AuditAddr splits a session address for the audit trail: the instance
// goes in its field, the session's name (if any) in the detail before
// detail, so that records of one instance stay found by instance. Both
// listeners audit through it.
func AuditAddr(addr string, detail ...any) (string, []any) {
	inst, name, named := strings.Cut(addr, "+")
	if !named || name == "" {
		return inst, detail
	}
	return inst, append([]any{"name", name}, detail...)
}

// ParseAddr reads INSTANCE or INSTANCE+NAME, refusing an instance name or
// a session name outside the contract's syntax (an empty name after '+'
// included) with a message that says which and what is allowed.
func ParseAddr(s string) (Addr, error) {
	inst, name, named := strings.Cut(s, "+")
	if err := CheckName(inst); err != nil {
		return Addr{}, err
	}
	if named {
		if err := CheckSessionName(name); err != nil {
			return Addr{}, err
		}
	}
	return Addr{Instance: inst, Name: name}, nil
}

// CheckSessionName refuses a session name outside the contract's syntax
// (the empty name included: the default session is written without '+').
func CheckSessionName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty name after '+' (the default session is INSTANCE, a named one INSTANCE+NAME)", ErrBadSessionName)
	}
	if !names.ValidSession(name) {
		return fmt.Errorf("%w %q: use lowercase letters, digits, '_' and '-' (at most 32, starting with a letter or digit)", ErrBadSessionName, truncate(name, 64))
	}
	return nil
}

// TooManySessionsError refuses a new session past a cap.
type TooManySessionsError struct {
	// Instance is set when the instance's cap (Config.MaxPerInstance) is
	// reached; otherwise Who's cap on named sessions across instances
	// (Config.MaxNamedPerWho) is.
	Instance, Who string
	Max           int
}

func (e *TooManySessionsError) Error() string {
	if e.Instance != "" {
		return fmt.Sprintf("instance %q already has %d sessions, the most allowed (--max-sessions-per-instance); attach to one of them (ssh HOST list), or end one first (exit its shell)", e.Instance, e.Max)
	}
	return fmt.Sprintf("%s already started %d named sessions, the most one credential may keep (--max-named-sessions); end one first (ssh HOST list)", e.Who, e.Max)
}

// WrongLoginError refuses a read-write attach with another login than
// the one the session runs as (a session runs as one login for its life).
type WrongLoginError struct {
	Addr  string // the session, INSTANCE[+NAME]
	Login string // what it runs as ("" the instance's default user)
	Asked string // what the client asked for
}

func (e *WrongLoginError) Error() string {
	asked := "the instance's default user"
	if e.Asked != "" {
		asked = fmt.Sprintf("%q", e.Asked)
	}
	if e.Login == "" {
		return fmt.Sprintf("session %s runs as the instance's default user, not as %s: attach to it without LOGIN@ (%s@HOST), or open a session of your own as %s (LOGIN@%s+NAME@HOST)",
			e.Addr, asked, e.Addr, asked, strings.SplitN(e.Addr, "+", 2)[0])
	}
	return fmt.Sprintf("session %s runs as %q, not as %s: attach to it as %s@%s@HOST, or open a session of your own (LOGIN@%s+NAME@HOST)",
		e.Addr, e.Login, asked, e.Login, e.Addr, strings.SplitN(e.Addr, "+", 2)[0])
}
