package websock

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// The browser's same-origin rule (origins.check) compares the Origin with
// the request's own Host, which a page reached by DNS rebinding chooses: a
// name of the attacker's that resolves to the gateway makes a page of
// theirs "same origin". So a login and a WebSocket upgrade are answered
// only for a Host the gateway is reached by: an IP address (no page of
// another site can have one as its origin and reach this listener),
// localhost, or a name given in Config.PublicHosts (--public-host).
// Scripts with a bearer token are not concerned: they choose their Host
// anyway, and their other routes are not checked.

var errHostRefused = errors.New("host not allowed")

// hosts is the allow-list of host names. It is read-only after New.
type hosts struct {
	names map[string]bool // lower-case names allowed with any port
	exact map[string]bool // lower-case "name:port" allowed with that port only
}

func newHosts(list []string) (hosts, error) {
	h := hosts{names: map[string]bool{}, exact: map[string]bool{}}
	for _, s := range list {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" {
			continue
		}
		if !originHost.MatchString(s) {
			return hosts{}, fmt.Errorf("public host %q: want a DNS name or an IP address, with an optional :port (no scheme, no path)", s)
		}
		if name, _, err := net.SplitHostPort(s); err == nil {
			if name == "" {
				return hosts{}, fmt.Errorf("public host %q: no name", s)
			}
			h.exact[s] = true
			continue
		}
		h.names[strings.Trim(s, "[]")] = true
	}
	return h, nil
}

// check refuses r when its Host is none the gateway is reached by.
func (h hosts) check(r *http.Request) error {
	host := strings.ToLower(r.Host)
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	name = strings.Trim(name, "[]")
	switch {
	case name == "":
		return fmt.Errorf("%w: the request names no host", errHostRefused)
	case name == "localhost", net.ParseIP(name) != nil, h.names[name], h.exact[host]:
		return nil
	}
	return fmt.Errorf("%w: this gateway does not answer to %q (the request's Host): browsers must reach it by localhost, an IP address, or a name given to --public-host", errHostRefused, truncateRunes(r.Host, 100))
}

// refuseHost answers a request whose Host is not allowed: 421 Misdirected
// Request (this server is not the one for that name).
func (s *Server) refuseHost(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Warn("host refused", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "host", truncateRunes(r.Host, 100))
	s.auditFailure(r, caller{}, r.PathValue("name"), err.Error())
	writeError(w, http.StatusMisdirectedRequest, err.Error())
}
