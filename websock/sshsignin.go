package websock

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/oidc"
)

// The SSH sign-in's page (contract, "Single sign-on", "Plain ssh"; red
// team round 4, M1). ssh prints PUBLIC_URL/ssh and a code; the link never
// carries the code, and this page never shows or fills it in: the person
// types what their own terminal shows (POST /ssh), which binds that one
// waiting request to their browser sign-in (oidc.Broker.Claim, a few tries
// per sign-in). The page then shows what the request asks for (the key's
// fingerprint, the login, the client's address and SSH version) with
// Approve and Deny, which carry a one-time ticket bound to the sign-in
// (POST /ssh/decide): a replayed POST is refused. The same page lists the
// SSH keys remembered for the identity (issuer and subject) with Forget
// buttons; GET /api/keys and POST /api/keys/forget are the same in JSON.
// Every POST needs the page's Origin (authed, actRoute).

// sshPage is the page's path, also the one place a sign-in may return to
// besides /.
const sshPage = "/ssh"

// writePage writes one of the gateway's own small pages, in the browser
// terminal's style (its stylesheet, its card).
func writePage(w http.ResponseWriter, status int, title, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// With no-referrer (harden.go) a form's POST carries "Origin: null",
	// which the Origin check refuses: these pages' forms send their
	// origin, and still no referrer to another site.
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>termgate: %s</title>
<link rel="stylesheet" href="/assets/app.css">
</head>
<body>
<section class="card">
<h1>termgate</h1>
%s
</section>
</body>
</html>
`, html.EscapeString(title), body)
}

// pageSignin is the sign-in behind a GET of the page: nil (and the
// browser sent through the provider first) when there is none.
func (s *Server) pageSignin(w http.ResponseWriter, r *http.Request) *signin {
	var si signin
	ck, err := r.Cookie(oidcCookie)
	if err == nil {
		err = s.cookies.openJSON(oidcCookie, ck.Value, &si)
	}
	if err == nil && si.V != signinVersion {
		err = errSigninMalformed
	}
	if err == nil {
		err = s.signins.check(si, time.Now())
	}
	if err != nil {
		http.Redirect(w, r, "/login/oidc?next="+url.QueryEscape(sshPage), http.StatusFound)
		return nil
	}
	return &si
}

// handleSSHPage serves GET /ssh: the code form and the remembered keys.
func (s *Server) handleSSHPage(w http.ResponseWriter, r *http.Request) {
	if err := s.hosts.check(r); err != nil {
		s.refuseHost(w, r, err)
		return
	}
	si := s.pageSignin(w, r)
	if si == nil {
		return
	}
	s.codeForm(w, http.StatusOK, si, "")
}

// handleSSHOldLink serves GET /ssh/{code}, the links older gateways
// printed: the code in them is ignored (typing it is the point), the
// browser goes to the form.
func (s *Server) handleSSHOldLink(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, sshPage, http.StatusFound)
}

// codeForm is the page that asks for the code, with errMsg above it.
func (s *Server) codeForm(w http.ResponseWriter, status int, si *signin, errMsg string) {
	var b strings.Builder
	fmt.Fprintf(&b, `<h2>Approve an SSH sign-in</h2>
<p>Signed in as <strong id=ssh-who>%s</strong>.</p>
<form id=ssh-code-form method=post action="/ssh" class=row>
<label for=ssh-code>Code shown by your terminal</label>
<input id=ssh-code name=code autocomplete=off autocapitalize=characters spellcheck=false maxlength=20 required placeholder="XXXX-XXXX">
<button id=ssh-code-submit type=submit>Continue</button>
</form>
`, html.EscapeString(si.Email))
	if errMsg != "" {
		fmt.Fprintf(&b, "<p id=ssh-error class=error role=alert>%s</p>\n", html.EscapeString(errMsg))
	}
	b.WriteString(`<p class=hint>Type the code that <em>your own</em> ssh printed. Never type a code that someone else sent you: ` +
		`approving it would let their key in as you.</p>
`)
	s.keyList(&b, si)
	writePage(w, status, "SSH sign-in", b.String())
}

// keyList writes the identity's remembered keys with Forget buttons.
func (s *Server) keyList(b *strings.Builder, si *signin) {
	ks := s.cfg.SigninState.KeysOf(si.Issuer, si.Subject, time.Now())
	b.WriteString("<h2>Your remembered SSH keys</h2>\n")
	if len(ks) == 0 {
		b.WriteString("<p id=ssh-keys-none class=hint>None: no SSH key signs in as you without asking.</p>\n")
		return
	}
	b.WriteString("<table id=ssh-keys><thead><tr><th>Key</th><th>Approved</th><th>From</th><th>Until</th><th></th></tr></thead><tbody>\n")
	for _, k := range ks {
		fmt.Fprintf(b, `<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td><form method=post action="/ssh/keys/forget"><input type=hidden name=fingerprint value="%s"><button type=submit class=danger>Forget</button></form></td></tr>
`, html.EscapeString(k.Fingerprint), k.Approved.UTC().Format(time.RFC3339), html.EscapeString(k.Remote), k.Expires.UTC().Format(time.RFC3339), html.EscapeString(k.Fingerprint))
	}
	b.WriteString("</tbody></table>\n<p class=hint>Forgetting a key ends its connections; its next ssh asks for a browser again. Signing out forgets the keys this sign-in approved.</p>\n")
}

// postSignin is the sign-in behind an authed POST of the page; it
// answers for other credentials.
func postSignin(w http.ResponseWriter, r *http.Request) (caller, bool) {
	c, _ := callerFrom(r.Context())
	if c.signin == nil {
		signinPage(w, http.StatusForbidden, "Only a sign-in with the identity provider can approve SSH sign-ins or forget their keys; tokens cannot.")
		return c, false
	}
	return c, true
}

// handleSSHCode serves POST /ssh: the typed code.
func (s *Server) handleSSHCode(w http.ResponseWriter, r *http.Request) {
	c, ok := postSignin(w, r)
	if !ok {
		return
	}
	si := c.signin
	req, created, ticket, err := s.cfg.SSHSignins.Claim(r.PostFormValue("code"), si.ID)
	if err != nil {
		status := http.StatusNotFound
		if errors.Is(err, oidc.ErrCodeTries) {
			status = http.StatusTooManyRequests
		}
		s.cfg.Audit.Event(audit.AuthFailure, s.who(r, c), "", "", "method", "oidc-ssh", "reason", err.Error(), "iss", si.Issuer, "sub", si.Subject)
		s.codeForm(w, status, si, err.Error())
		return
	}
	fps := make([]string, len(req.Fingerprints))
	for i, fp := range req.Fingerprints {
		fps[i] = "<code>" + html.EscapeString(fp) + "</code>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<h2>Approve this SSH sign-in?</h2>
<p id=ssh-ask>An SSH connection asks to sign in as <strong>%s</strong>. Approve it only if it is yours: check that your terminal shows this key.</p>
<table id=ssh-request><tbody>
<tr><th>Key</th><td id=ssh-fingerprint>%s</td></tr>
<tr><th>Login (instance)</th><td id=ssh-login><code>%s</code></td></tr>
<tr><th>From</th><td id=ssh-remote>%s</td></tr>
<tr><th>SSH client</th><td id=ssh-client><code>%s</code></td></tr>
<tr><th>Started</th><td>%s</td></tr>
</tbody></table>
<form method=post action="/ssh/decide" class=row>
<input type=hidden name=ticket value="%s">
<button id=approve type=submit name=decision value=approve>Approve</button>
<button id=deny type=submit name=decision value=deny class=danger>Deny</button>
</form>
`, html.EscapeString(si.Email), strings.Join(fps, "<br>"), html.EscapeString(req.User), html.EscapeString(req.Remote),
		html.EscapeString(req.ClientVersion), created.UTC().Format(time.RFC3339), html.EscapeString(ticket))
	writePage(w, http.StatusOK, "SSH sign-in", b.String())
}

// handleSSHDecide serves POST /ssh/decide: Approve or Deny, once.
func (s *Server) handleSSHDecide(w http.ResponseWriter, r *http.Request) {
	c, ok := postSignin(w, r)
	if !ok {
		return
	}
	si := c.signin
	approve := r.PostFormValue("decision") == "approve"
	exp := time.Now().Add(s.cfg.KeyTTL)
	if si.Expires.Before(exp) {
		exp = si.Expires // the key goes with the sign-in that approved it
	}
	a := oidc.Approved{Issuer: si.Issuer, Subject: si.Subject, Email: si.Email, EmailVerified: si.Verified, Groups: si.Groups,
		SigninID: si.ID, Expires: exp, Browser: r.RemoteAddr}
	req, err := s.cfg.SSHSignins.Decide(r.PostFormValue("ticket"), si.ID, approve, a)
	if err != nil {
		s.cfg.Audit.Event(audit.AuthFailure, s.who(r, c), "", "", "method", "oidc-ssh", "reason", err.Error(), "iss", si.Issuer, "sub", si.Subject)
		writePage(w, http.StatusConflict, "SSH sign-in", `<p id=ssh-error class=error role=alert>`+html.EscapeString(err.Error())+`</p><p><a href="/ssh">Back</a></p>`)
		return
	}
	fields := []any{"method", "oidc-ssh", "fingerprint", strings.Join(req.Fingerprints, ","), "ssh_remote", req.Remote, "login", req.User,
		"ssh_client", req.ClientVersion, "iss", si.Issuer, "sub", si.Subject, "email_verified", si.Verified}
	if !approve {
		s.log.Info("SSH sign-in denied", "via", "web", "who", si.Email, "ssh_remote", req.Remote)
		s.cfg.Audit.Event(audit.AuthFailure, s.who(r, c), req.User, "", append(fields, "reason", "denied in the browser")...)
		writePage(w, http.StatusOK, "SSH sign-in", `<p id=denied>Denied: the SSH connection from `+html.EscapeString(req.Remote)+` was refused and let nothing in.</p><p><a href="/ssh">Back</a></p>`)
		return
	}
	s.log.Info("SSH sign-in approved", "via", "web", "who", si.Email, "ssh_remote", req.Remote, "fingerprint", strings.Join(req.Fingerprints, ","))
	s.cfg.Audit.Event(audit.AuthSuccess, s.who(r, c), req.User, "", append(fields, "until", exp.UTC().Format(time.RFC3339))...)
	writePage(w, http.StatusOK, "SSH sign-in", fmt.Sprintf(`<p id=approved>Signed in as %s: go back to your terminal. The key is remembered until %s, or until this browser signs out.</p><p><a href="/ssh">Your remembered keys</a></p>`,
		html.EscapeString(si.Email), exp.UTC().Format(time.RFC3339)))
}

// forget forgets one of the signed-in identity's keys; false if it has
// no such key.
func (s *Server) forget(r *http.Request, c caller, fp string) bool {
	si := c.signin
	ok, err := s.cfg.SigninState.Forget(fp, si.Issuer, si.Subject)
	if err != nil {
		s.log.Error("a forgotten key was not written to the shared sign-in state: other gateways let it in until it expires", "err", err)
	}
	if !ok {
		return false
	}
	s.log.Info("forgot a remembered SSH key", "via", "web", "who", si.Email, "fingerprint", fp)
	s.cfg.Audit.Event(audit.Detach, s.who(r, c), "", "", "reason", "key forgotten", "fingerprint", fp, "iss", si.Issuer, "sub", si.Subject)
	s.cfg.Registry.Recheck()
	return true
}

// handleSSHForgetForm serves POST /ssh/keys/forget: the page's Forget.
func (s *Server) handleSSHForgetForm(w http.ResponseWriter, r *http.Request) {
	c, ok := postSignin(w, r)
	if !ok {
		return
	}
	if !s.forget(r, c, r.PostFormValue("fingerprint")) {
		s.codeForm(w, http.StatusNotFound, c.signin, "No such key is remembered for you (already forgotten or expired).")
		return
	}
	http.Redirect(w, r, sshPage, http.StatusSeeOther)
}

// keyJSON is one remembered key in GET /api/keys.
type keyJSON struct {
	Fingerprint string    `json:"fingerprint"`
	Approved    time.Time `json:"approved"`
	Expires     time.Time `json:"expires"`
	Remote      string    `json:"remote"`
	// ThisSignin: approved by the sign-in asking (its logout forgets it).
	ThisSignin bool `json:"this_signin"`
}

// handleKeysList serves GET /api/keys: {"keys":[…]}, the SSH keys
// remembered for the signed-in identity.
func (s *Server) handleKeysList(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	if c.signin == nil {
		writeError(w, http.StatusForbidden, "only a sign-in with the identity provider has remembered SSH keys; tokens have none")
		return
	}
	out := []keyJSON{}
	for _, k := range s.cfg.SigninState.KeysOf(c.signin.Issuer, c.signin.Subject, time.Now()) {
		out = append(out, keyJSON{Fingerprint: k.Fingerprint, Approved: k.Approved, Expires: k.Expires, Remote: k.Remote, ThisSignin: k.SigninID == c.signin.ID})
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": out})
}

// handleKeysForget serves POST /api/keys/forget {"fingerprint":FP}: 204,
// or 404 when the identity has no such key.
func (s *Server) handleKeysForget(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	if c.signin == nil {
		writeError(w, http.StatusForbidden, "only a sign-in with the identity provider has remembered SSH keys; tokens have none")
		return
	}
	var body struct {
		Fingerprint string `json:"fingerprint"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&body); err != nil || body.Fingerprint == "" {
		writeError(w, http.StatusBadRequest, `send {"fingerprint":"SHA256:…"}, as GET /api/keys lists them`)
		return
	}
	if !s.forget(r, c, body.Fingerprint) {
		writeError(w, http.StatusNotFound, "no such key is remembered for you (already forgotten or expired)")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
