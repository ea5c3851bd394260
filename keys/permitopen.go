package keys

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// parsePermitOpen parses the value of one permitopen= option as OpenSSH's
// auth-options.c does: HOST:PORT (or HOST/PORT), an IPv6 address in square
// brackets, PORT a number in 1..65535 or "*" (any port), HOST "*" for any
// host. No name lookup or pattern matching is done; the host is kept
// literally (without brackets). The result is net.JoinHostPort(HOST, PORT),
// which Identity.MayOpen splits again.
func parsePermitOpen(v string) (string, error) {
	shown := displayName(v, 80)
	var host, rest string
	if strings.HasPrefix(v, "[") {
		end := strings.IndexByte(v, ']')
		if end < 0 {
			return "", fmt.Errorf("permitopen=%q: missing ']' after the IPv6 address", shown)
		}
		host, rest = v[1:end], v[end+1:]
		if rest == "" || (rest[0] != ':' && rest[0] != '/') {
			return "", fmt.Errorf("permitopen=%q: want [ADDRESS]:PORT", shown)
		}
		rest = rest[1:]
	} else {
		i := strings.IndexAny(v, ":/")
		if i < 0 {
			return "", fmt.Errorf("permitopen=%q: want HOST:PORT", shown)
		}
		host, rest = v[:i], v[i+1:]
	}
	// NI_MAXHOST is 1025 with its NUL; a host with a space or a control
	// character could never be what a client asks for, and must not reach
	// a log unquoted.
	if host == "" || len(host) >= 1025 || strings.ContainsFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", fmt.Errorf("permitopen=%q: invalid host", shown)
	}
	if rest != "*" {
		n, err := strconv.Atoi(rest) // leading zeros are fine, as in a2port
		if err != nil || n < 1 || n > 65535 || strings.Trim(rest, "0123456789") != "" {
			return "", fmt.Errorf("permitopen=%q: invalid port (want 1-65535 or *)", shown)
		}
		rest = strconv.Itoa(n) // MayOpen compares the port's decimal form
	}
	return net.JoinHostPort(host, rest), nil
}

// parsePermitListen parses the value of one permitlisten= option as
// OpenSSH does: [HOST:]PORT, an IPv6 address in square brackets, PORT a
// number in 1..65535 or "*", HOST "*" for any address. The result is
// net.JoinHostPort(HOST, PORT), HOST "" when none was given (the
// loopback: Access.DecideListen).
func parsePermitListen(v string) (string, error) {
	if !strings.ContainsAny(v, ":/") {
		v = ":" + v
	}
	if strings.HasPrefix(v, ":") || strings.HasPrefix(v, "/") {
		p, err := parsePermitOpen("x" + v)
		if err != nil {
			return "", fmt.Errorf("permitlisten=%q: invalid port (want [HOST:]PORT, PORT 1-65535 or *)", displayName(v, 80))
		}
		_, port, _ := net.SplitHostPort(p)
		return net.JoinHostPort("", port), nil
	}
	p, err := parsePermitOpen(v)
	if err != nil {
		return "", fmt.Errorf("permitlisten%s", strings.TrimPrefix(err.Error(), "permitopen"))
	}
	return p, nil
}
