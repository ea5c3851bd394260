package websock

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"net/http"
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
	if next != sshPage {
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
	if _, ok := s.cfg.Policies.Identity(claims.Email, claims.Groups, claims.EmailVerified); !ok {
		s.signinRefused(w, r, claims.Email, http.StatusForbidden, fmt.Sprintf("You are signed in as %s, but no policy of this gateway gives that identity access. Ask its administrator for a rule (policies:) for your email or one of your groups.", claims.Email))
		return
	}
	si := signin{V: signinVersion, ID: oidc.NewPending().State, Issuer: claims.Issuer, Subject: claims.Subject, Email: claims.Email,
		Verified: claims.EmailVerified, Groups: claims.Groups,
		Expires: time.Now().Add(s.cfg.OIDCSessionMax).Truncate(time.Second)}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: s.cookies.sealJSON(oidcCookie, si), Path: "/", Expires: si.Expires,
		MaxAge: int(s.cfg.OIDCSessionMax / time.Second), HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
	s.log.Info("signed in", "via", "web", "who", claims.Email, "groups", len(claims.Groups), "iss", claims.Issuer, "sub", claims.Subject)
	s.cfg.Audit.Event(audit.AuthSuccess, audit.Who{Via: "oidc", Name: claims.Email, Remote: r.RemoteAddr}, "", "", "method", "oidc", "groups", claims.Groups,
		"iss", claims.Issuer, "sub", claims.Subject, "email_verified", claims.EmailVerified)
	next := "/"
	if pend.Next == sshPage {
		next = pend.Next
	}
	http.Redirect(w, r, next, http.StatusFound)
}

// signinRefused audits a failed sign-in and shows why.
func (s *Server) signinRefused(w http.ResponseWriter, r *http.Request, who string, status int, msg string) {
	s.cfg.Audit.Event(audit.AuthFailure, audit.Who{Via: "oidc", Name: who, Remote: r.RemoteAddr}, "", "", "reason", msg)
	signinPage(w, status, msg)
}

// signinPage is the page for the browser that lands on a failed sign-in.
func signinPage(w http.ResponseWriter, status int, msg string) {
	writePage(w, status, "sign-in", `<p id=signin-failed class=error role=alert>`+html.EscapeString(msg)+`</p><p><a href="/">Back to termgate</a></p>`)
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
	id, ok := s.cfg.Policies.Identity(si.Email, si.Groups, si.Verified)
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
