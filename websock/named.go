package websock

import (
	"net/http"
	"strings"

	"github.com/termgate/termgate/sessions"
)

// sessionAddr is the session a request addresses: the instance's default
// session, or with ?name=NAME its named session NAME (CONTRACT.md "Named
// sessions and logins"), as the registry takes it (INSTANCE+NAME). An
// empty name= is the default session; a name outside the contract's
// syntax is an error for a 400.
func sessionAddr(r *http.Request, instance string) (string, error) {
	name := r.URL.Query().Get("name")
	if name == "" {
		return instance, nil
	}
	if err := sessions.CheckSessionName(name); err != nil {
		return "", err
	}
	return sessions.Addr{Instance: instance, Name: name}.String(), nil
}

// instanceOf is the instance part of a session address.
func instanceOf(addr string) string {
	inst, _, _ := strings.Cut(addr, "+")
	return inst
}
