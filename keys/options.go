package keys

import (
	"errors"
	"fmt"
	"strings"
)

// keyOptions is what termgate takes from an authorized_keys line's options.
type keyOptions struct {
	instances []string
	from      *fromList // nil: any client address
	noPTY     bool
	readOnly  bool
	// noPortForwarding and permitOpen are OpenSSH's no-port-forwarding
	// (also set by restrict, cleared by port-forwarding) and
	// permitopen="HOST:PORT" (repeatable; see permitopen.go).
	noPortForwarding bool
	permitOpen       []string
	permitListen     []string // permitlisten="[HOST:]PORT" (repeatable)
	// noAgentForwarding is OpenSSH's no-agent-forwarding (also set by
	// restrict, cleared by agent-forwarding).
	noAgentForwarding bool
	// files is termgate's files="download" (OpenSSH has no such option).
	files Files
	// logins is termgate's logins="app,deploy" (logins.go).
	logins []string
}

// keyReadOnly is termgate's own authorized_keys option (OpenSSH has no such
// option and would refuse the line): the key attaches as an observer.
const keyReadOnly = "read-only"

// flagEffect is what a value-less option does to one permission: deny,
// allow, or leave it alone.
type flagEffect int8

const (
	leave flagEffect = iota
	deny
	allow
)

// flagOptions are the value-less options termgate accepts and what each does
// to the PTY, the port-forwarding and the agent-forwarding permissions (X11
// forwarding and rc files are never available through the gateway, so
// their options change nothing).
var flagOptions = map[string]struct{ pty, forward, agent flagEffect }{
	"restrict":            {deny, deny, deny},
	"no-pty":              {deny, leave, leave},
	"pty":                 {allow, leave, leave},
	"no-port-forwarding":  {leave, deny, leave},
	"port-forwarding":     {leave, allow, leave},
	"no-agent-forwarding": {leave, leave, deny},
	"agent-forwarding":    {leave, leave, allow},
	"no-x11-forwarding":   {},
	"no-user-rc":          {},
	"x11-forwarding":      {},
	"user-rc":             {},
}

// apply sets *perm to what effect says (deny sets the "no" flag).
func (e flagEffect) apply(no *bool) {
	switch e {
	case deny:
		*no = true
	case allow:
		*no = false
	}
}

// parseOptions interprets the raw options gossh.ParseAuthorizedKey returns
// (e.g. `from="10.0.0.0/8"`, `no-pty`). Option names are case-insensitive
// and apply in order, as in OpenSSH ("restrict,pty" allows a PTY). An error
// names the option that makes the line unusable; warnings describe problems
// that leave the line usable but restrictive (a from= that never matches).
func parseOptions(raw []string) (o keyOptions, warnings []string, err error) {
	seen := map[string]bool{}
	for _, opt := range raw {
		name, value, hasValue := strings.Cut(opt, "=")
		name = strings.ToLower(name)
		if name == keyReadOnly {
			if hasValue {
				return o, nil, fmt.Errorf("option %q takes no value", displayName(opt, 80))
			}
			o.readOnly = true
			continue
		}
		if effect, ok := flagOptions[name]; ok {
			if hasValue {
				return o, nil, fmt.Errorf("option %q takes no value", displayName(opt, 80))
			}
			effect.pty.apply(&o.noPTY)
			effect.forward.apply(&o.noPortForwarding)
			effect.agent.apply(&o.noAgentForwarding)
			continue
		}
		if name == "permitlisten" { // repeatable, as in OpenSSH
			if !hasValue {
				return o, nil, fmt.Errorf("option permitlisten needs a quoted value")
			}
			v, err := dequote(value)
			if err != nil {
				return o, nil, fmt.Errorf("option permitlisten=: %w", err)
			}
			where, err := parsePermitListen(v)
			if err != nil {
				return o, nil, err
			}
			o.permitListen = append(o.permitListen, where)
			continue
		}
		if name == "permitopen" { // repeatable, as in OpenSSH
			if !hasValue {
				return o, nil, fmt.Errorf("option permitopen needs a quoted value")
			}
			v, err := dequote(value)
			if err != nil {
				return o, nil, fmt.Errorf("option permitopen=: %w", err)
			}
			target, err := parsePermitOpen(v)
			if err != nil {
				return o, nil, err
			}
			o.permitOpen = append(o.permitOpen, target)
			continue
		}
		switch name {
		case "instances", "from", "files", "logins":
		default:
			return o, nil, fmt.Errorf("unsupported option %q", displayName(name, 40))
		}
		if seen[name] {
			return o, nil, fmt.Errorf("option %s= given twice", name)
		}
		seen[name] = true
		if !hasValue {
			return o, nil, fmt.Errorf("option %s needs a quoted value", name)
		}
		v, err := dequote(value)
		if err != nil {
			return o, nil, fmt.Errorf("option %s=: %w", name, err)
		}
		if name == "instances" {
			if o.instances, err = parseInstances(v); err != nil {
				return o, nil, err
			}
			continue
		}
		if name == "files" {
			if o.files, err = parseFiles(v); err != nil {
				return o, nil, err
			}
			continue
		}
		if name == "logins" {
			if o.logins, err = parseLogins(v); err != nil {
				return o, nil, err
			}
			continue
		}
		var problem string
		o.from, problem = parseFrom(v)
		if problem != "" {
			warnings = append(warnings, problem)
		}
	}
	return o, warnings, nil
}

// dequote undoes OpenSSH's option quoting: the value must be enclosed in
// double quotes, and \" inside stands for a quote (other backslashes are
// kept).
func dequote(v string) (string, error) {
	if !strings.HasPrefix(v, `"`) {
		return "", errors.New("value must be in double quotes")
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch {
		case v[i] == '\\' && i+1 < len(v) && v[i+1] == '"':
			b.WriteByte('"')
			i++
		case v[i] == '"':
			if i != len(v)-1 {
				return "", fmt.Errorf("unexpected text after the closing quote in %q", displayName(v, 80))
			}
			return b.String(), nil
		default:
			b.WriteByte(v[i])
		}
	}
	return "", errors.New("missing closing quote")
}
