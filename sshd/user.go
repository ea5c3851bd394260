package sshd

import (
	"strconv"
	"strings"

	"github.com/termgate/termgate/sessions"
)

// sshUser is the SSH user name read as CONTRACT.md "SSH" writes it:
// [LOGIN@]INSTANCE[+NAME]. OpenSSH, scp and sftp split user and host at
// the last '@', so "app@web1" reaches the gateway as the user. INSTANCE
// is what commands, file transfers and forwards run in (the session name
// matters only to sessions); INSTANCE+NAME addresses the named session.
type sshUser struct {
	raw      string // as the client sent it
	login    string // before the last '@'; "" for none
	instance string // the instance part (the whole name when it has no '@' or '+')
	name     string // the session's name; "" the default session
	named    bool   // a '+' was given: an empty name after it is refused
}

func parseUser(raw string) sshUser {
	u := sshUser{raw: raw}
	rest := raw
	if i := strings.LastIndexByte(raw, '@'); i >= 0 {
		u.login, rest = raw[:i], raw[i+1:]
	}
	u.instance, u.name, u.named = strings.Cut(rest, "+")
	return u
}

// addr is the session the user names: INSTANCE or INSTANCE+NAME.
func (u sshUser) addr() string {
	return sessions.Addr{Instance: u.instance, Name: u.name}.String()
}

// problem is why the user name cannot be used, "" when it can: an empty
// LOGIN before '@', or a session name outside the contract's syntax (a
// login's own syntax and whether the credential may use it are the access
// decision's: keys.Access.DecideLogin). The user termgate and
// names with neither '@' nor '+' (the client's login name, for the
// gateway's own commands) have none.
func (u sshUser) problem() string {
	switch {
	case u.raw == gatewayUser:
		return ""
	case strings.HasSuffix(u.raw, "@"):
		return "termgate: no instance after the last '@' in the user name " + strconv.Quote(clip(u.raw, 170)) + "; write [LOGIN@]INSTANCE[+NAME]@HOST"
	case strings.Contains(u.raw, "@") && u.login == "":
		return "termgate: empty LOGIN before '@'; connect as " + clip(u.addr(), 170) + "@HOST for the credential's default login"
	case u.named:
		if err := sessions.CheckSessionName(u.name); err != nil {
			return "termgate: " + err.Error()
		}
	}
	return ""
}

// nameAttr is the audit detail naming a named session; none for the
// default session.
func nameAttr(name string) []any {
	if name == "" {
		return nil
	}
	return []any{"name", name}
}
