package websock

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/oidc"
)

// Single sign-on routes (contract, "Single sign-on"; signin.go has the
// cookie): GET /login/oidc sends the browser to the provider with a fresh
// state, nonce and PKCE verifier kept in a short-lived signed cookie; GET
// /oidc/callback checks the state, trades the code for a verified ID token
// and sets the sign-in cookie (SameSite=Lax, so that the provider's
// redirect back carries the pending one); the page then works as with a
// token login.

const pendingTTL = 10 * time.Minute

// secureCookies: cookies over TLS, or for a public URL that is https
// (behind a proxy that ends TLS), are Secure.
func (s *Server) secureCookies(r *http.Request) bool {
	return r.TLS != nil || s.cfg.PublicURLHTTPS
}

func (s *Server) handleOIDCLogin(w http.ResponseWriter, r *http.Request) {
	if err := s.hosts.check(r); err != nil {
		s.refuseHost(w, r, err)
		return
	}
	pend := oidc.NewPending()
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	u, err := s.cfg.OIDC.AuthURL(ctx, pend)
	if err != nil {
		s.log.Warn("sign-in: the provider does not answer", "issuer", s.cfg.OIDC.Issuer(), "err", err)
		signinPage(w, http.StatusServiceUnavailable, fmt.Sprintf("The identity provider (%s) does not answer; try again shortly.", s.cfg.OIDC.Name()))
		return
	}
	next := r.URL.Query().Get("next")
	if !sshPath.MatchString(next) {
		next = "/"
	}
	value := s.cookies.sealJSON(oidcPendingCookie, pendingSignin{V: signinVersion, State: pend.State, Nonce: pend.Nonce, Verifier: pend.Verifier, Expires: time.Now().Add(pendingTTL), Next: next})
	http.SetCookie(w, &http.Cookie{Name: oidcPendingCookie, Value: value, Path: "/oidc/", MaxAge: int(pendingTTL / time.Second),
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, u, http.StatusFound)
}

func (s *Server) handleOIDCCallback(w http.ResponseWriter, r *http.Request) {
	if err := s.hosts.check(r); err != nil {
		s.refuseHost(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: oidcPendingCookie, Value: "", Path: "/oidc/", MaxAge: -1, HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
	var pend pendingSignin
	ck, err := r.Cookie(oidcPendingCookie)
	if err == nil {
		err = s.cookies.openJSON(oidcPendingCookie, ck.Value, &pend)
	}
	q := r.URL.Query()
	switch {
	case err != nil || pend.V != signinVersion:
		s.signinRefused(w, r, "", http.StatusBadRequest, "This sign-in was not started here, or its cookie was lost (cookies blocked?): start again.")
		return
	case time.Now().After(pend.Expires):
		s.signinRefused(w, r, "", http.StatusBadRequest, "This sign-in took longer than 10 minutes: start again.")
		return
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(pend.State)) != 1:
		s.signinRefused(w, r, "", http.StatusBadRequest, "This sign-in's state does not match (a second tab, or a forged link): start again.")
		return
	case q.Get("error") != "":
		s.signinRefused(w, r, "", http.StatusUnauthorized, "The identity provider refused the sign-in: "+clipText(q.Get("error")+" "+q.Get("error_description"), 200))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	claims, err := s.cfg.OIDC.Exchange(ctx, q.Get("code"), oidc.Pending{State: pend.State, Nonce: pend.Nonce, Verifier: pend.Verifier})
	if err != nil {
		s.log.Warn("sign-in failed", "via", "web", "remote", r.RemoteAddr, "err", err)
		status := http.StatusUnauthorized
		if errors.Is(err, oidc.ErrUnavailable) {
			status = http.StatusServiceUnavailable
		}
		s.signinRefused(w, r, "", status, "The sign-in did not complete: "+err.Error())
		return
	}
	if _, ok := s.cfg.Policies.Identity(claims.Email, claims.Groups); !ok {
		s.signinRefused(w, r, claims.Email, http.StatusForbidden, fmt.Sprintf("You are signed in as %s, but no policy of this gateway gives that identity access. Ask its administrator for a rule (policies:) for your email or one of your groups.", claims.Email))
		return
	}
	si := signin{V: signinVersion, ID: oidc.NewPending().State, Subject: claims.Subject, Email: claims.Email, Groups: claims.Groups,
		Expires: time.Now().Add(s.cfg.OIDCSessionMax).Truncate(time.Second)}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: s.cookies.sealJSON(oidcCookie, si), Path: "/", Expires: si.Expires,
		MaxAge: int(s.cfg.OIDCSessionMax / time.Second), HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
	s.log.Info("signed in", "via", "web", "who", claims.Email, "groups", len(claims.Groups))
	s.cfg.Audit.Event(audit.AuthSuccess, audit.Who{Via: "oidc", Name: claims.Email, Remote: r.RemoteAddr}, "", "", "method", "oidc", "groups", claims.Groups)
	next := "/"
	if sshPath.MatchString(pend.Next) {
		next = pend.Next
	}
	http.Redirect(w, r, next, http.StatusFound)
}

// signinRefused audits a failed sign-in and shows why.
func (s *Server) signinRefused(w http.ResponseWriter, r *http.Request, who string, status int, msg string) {
	s.cfg.Audit.Event(audit.AuthFailure, audit.Who{Via: "oidc", Name: who, Remote: r.RemoteAddr}, "", "", "reason", msg)
	signinPage(w, status, msg)
}

// signinPage is a minimal page for the browser that lands on a failed
// sign-in.
func signinPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>termgate: sign-in</title><p id=signin-failed>%s</p><p><a href=\"/\">Back to termgate</a></p>\n", html.EscapeString(msg))
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// signinCaller authenticates a request by its sign-in cookie.
func (s *Server) signinCaller(w http.ResponseWriter, r *http.Request, value string) (caller, bool) {
	var si signin
	err := s.cookies.openJSON(oidcCookie, value, &si)
	if err == nil && si.V != signinVersion {
		err = errSigninMalformed
	}
	if err == nil {
		err = s.signins.check(si, time.Now())
	}
	if err != nil {
		s.credentialRefused(w, r, err.Error())
		return caller{}, false
	}
	id, ok := s.cfg.Policies.Identity(si.Email, si.Groups)
	if !ok {
		s.auditFailure(r, caller{id: keys.Identity{Name: si.Email}}, r.PathValue("name"), "no policy for this identity")
		writeError(w, http.StatusForbidden, fmt.Sprintf("signed in as %s, but no policy of this gateway gives that identity access", si.Email))
		return caller{}, false
	}
	return caller{id: id, method: bySignin, signin: &si}, true
}

// watchSignins cuts the clients of sign-ins that logged out or expired:
// once a second it asks the registry to recheck when one did (contract:
// within 5 s). It runs while the server does; Shutdown stops it.
func (s *Server) watchSignins(stop <-chan struct{}) {
	defer s.signinsDone.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			if s.signins.due(now) {
				s.cfg.Registry.Recheck()
			}
		}
	}
}

// handleSigninOptions serves GET /api/signin (no credential needed): how
// the page may sign in, {"oidc":bool,"provider":NAME}.
func (s *Server) handleSigninOptions(w http.ResponseWriter, _ *http.Request) {
	out := map[string]any{"oidc": s.cfg.OIDC != nil}
	if s.cfg.OIDC != nil {
		out["provider"] = s.cfg.OIDC.Name()
	}
	writeJSON(w, http.StatusOK, out)
}

// sshPath is the approval page of an SSH sign-in's code (the only "next"
// a sign-in may return to besides /).
var sshPath = regexp.MustCompile(`^/ssh/[A-Z0-9]{4}-[A-Z0-9]{4}$`)

// handleSSHSignin serves GET /ssh/{code}: after a browser sign-in (it
// sends the browser through /login/oidc first), a page that asks whether
// to let the waiting SSH connection in as this identity. Approving is a
// POST (handleSSHApprove): opening a link never signs anyone in.
func (s *Server) handleSSHSignin(w http.ResponseWriter, r *http.Request) {
	if err := s.hosts.check(r); err != nil {
		s.refuseHost(w, r, err)
		return
	}
	code := r.PathValue("code")
	ck, err := r.Cookie(oidcCookie)
	var si signin
	if err == nil {
		err = s.cookies.openJSON(oidcCookie, ck.Value, &si)
	}
	if err == nil {
		err = s.signins.check(si, time.Now())
	}
	if err != nil {
		http.Redirect(w, r, "/login/oidc?next="+url.QueryEscape("/ssh/"+code), http.StatusFound)
		return
	}
	pending, ok := s.cfg.SSHSignins.Lookup(code)
	if !ok {
		signinPage(w, http.StatusNotFound, fmt.Sprintf("No SSH sign-in waits with the code %s: it ended or timed out. Run ssh again.", code))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// With no-referrer (harden.go) a form's POST carries "Origin: null",
	// which the Origin check refuses: this page's form sends its origin,
	// and still no referrer to another site.
	w.Header().Set("Referrer-Policy", "same-origin")
	_, _ = fmt.Fprintf(w, `<!doctype html><meta charset=utf-8><title>termgate: SSH sign-in</title>
<p id=ssh-ask>An SSH connection from %s (started %s) asks to sign in as <b>%s</b> with the code <b>%s</b>. Approve it only if you started it.</p>
<form method=post><button id=approve type=submit>Approve</button></form>
`, html.EscapeString(pending.Remote), pending.Created.UTC().Format(time.RFC3339), html.EscapeString(si.Email), html.EscapeString(code))
}

// handleSSHApprove serves POST /ssh/{code}: the signed-in identity
// approves the waiting SSH connection, whose key is then remembered for
// --oidc-key-ttl. Only a sign-in (not a token login) may approve.
func (s *Server) handleSSHApprove(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	if c.signin == nil {
		signinPage(w, http.StatusForbidden, "Only a sign-in with the identity provider can approve an SSH sign-in; tokens cannot.")
		return
	}
	code := r.PathValue("code")
	a := oidc.Approved{Email: c.signin.Email, Groups: c.signin.Groups, Expires: time.Now().Add(s.cfg.KeyTTL)}
	if err := s.cfg.SSHSignins.Approve(code, a); err != nil {
		signinPage(w, http.StatusNotFound, err.Error())
		return
	}
	s.log.Info("SSH sign-in approved", "via", "web", "who", a.Email)
	s.cfg.Audit.Event(audit.AuthSuccess, s.who(r, c), "", "", "method", "oidc-ssh", "code", code)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>termgate: SSH sign-in</title><p id=approved>Signed in as %s: go back to your terminal.</p>\n", html.EscapeString(a.Email))
}
