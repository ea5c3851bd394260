package main

import (
	"log/slog"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/metrics"
	"github.com/termgate/termgate/oidc"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
	"github.com/termgate/termgate/sshd"
	"github.com/termgate/termgate/web"
	"github.com/termgate/termgate/websock"
)

// wiring is what run has built, which each listener is made from: one
// method per listener, so a feature adds its field where it is used.
type wiring struct {
	o        *options
	log      *slog.Logger
	audit    *audit.Log
	creds    *credentials
	reg      *sessions.Registry
	runner   remote.Runner
	switches keys.Switches

	provider    *oidc.Provider // nil without --oidc-issuer
	https       bool
	signinState *oidc.Store
	sshSignIn   *sshd.SignIn
	stopStartUp func() // ends the start-up work (main.go: startUp)
}

// sshServer is the SSH listener's server. Every reload of keys, tokens or
// CAs re-checks the attached clients and what runs beside their sessions.
func (w *wiring) sshServer() (*sshd.Server, error) {
	o, creds := w.o, w.creds
	acceptEnv, err := sshd.ParseAcceptEnv(o.acceptEnv) // checked with the flags already
	if err != nil {
		return nil, err
	}
	srv, err := sshd.New(sshd.Config{
		AcceptEnv:  acceptEnv,
		SignIn:     w.sshSignIn,
		HostSigner: creds.hostKey, Keys: creds.keys, UserCAs: creds.userCAs, CompatAlgorithms: o.sshCompat,
		Audit: w.audit, Registry: w.reg, Logger: w.log,
		Remote: w.runner, Switches: w.switches,
		ForwardIdleTimeout: forwardIdle(o.forwardIdleTimeout),
		PublicHost:         publicHostName(o.publicHost),
	})
	if err != nil {
		return nil, err
	}
	recheck := func() {
		w.reg.Recheck()
		srv.Recheck()
	}
	creds.recheck.Store(&recheck)
	return srv, nil
}

// webServer is the HTTP and WebSocket listener's server; its metrics
// include the SSH server's forwards.
func (w *wiring) webServer(sshSrv *sshd.Server) (*websock.Server, error) {
	o, creds := w.o, w.creds
	return websock.New(websock.Config{
		SSHSignins:     w.sshSignIn.Pending(),
		SigninState:    w.signinState,
		KeyTTL:         o.oidcKeyTTL,
		OIDC:           w.provider,
		Policies:       o.policies,
		OIDCSessionMax: o.oidcSessionMax,
		PublicURLHTTPS: w.https,
		Registry:       w.reg,
		Remote:         w.runner,
		Switches:       w.switches,
		MaxUploadSize:  o.maxUploadSize,
		Tokens:         creds.tokens,
		CookieKey:      creds.cookieKey,
		AllowedOrigins: o.allowedOrigins,
		PublicHosts:    splitList(o.publicHost),
		Logger:         w.log,
		Audit:          w.audit,
		TLS:            creds.tls,
		RequestRate:    requestRate(o.httpRateLimit),
		RequestBurst:   requestBurst(o.httpRateLimit),
		Metrics:        metrics.Handler(w.reg, metrics.ForwardCollector(forwardStats(sshSrv)), metrics.AuditCollector(w.audit.Counts)),
		Page:           web.Handler(),
		RecordDir:      o.recordDir,
	})
}
