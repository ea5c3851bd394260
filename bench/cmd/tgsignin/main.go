// Command tgsignin measures single sign-on for `make bench` (issue 24,
// "Speed"), each path against its anchor in the same run, as a ratio:
//
//   - a browser sign-in through the gateway (GET /login/oidc, Dex's form,
//     the gateway's callback: code exchange and ID token verification)
//     against the same authorization-code flow with Dex alone (the client
//     exchanges and verifies itself);
//   - `ssh termgate@gw whoami` with a key remembered from a browser
//     sign-in against the same with a key in authorized_keys.
//
// A plain HTTP client plays the browser (Dex's password form), so the
// numbers are the servers' and not Chromium's. Usage:
//
//	tgsignin -termgate bin/termgate -issuer http://127.0.0.1:5556/dex [-n 20]
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/crypto/ssh"
	"golang.org/x/oauth2"

	"github.com/termgate/termgate/internal/gatewayproc"
)

func main() {
	bin := flag.String("termgate", "bin/termgate", "the termgate binary")
	issuer := flag.String("issuer", os.Getenv("TERMGATE_TEST_OIDC_ISSUER"), "the test Dex's issuer (scripts/dex/up.sh)")
	n := flag.Int("n", 20, "runs of each")
	flag.Parse()
	if err := run(*bin, *issuer, *n); err != nil {
		fmt.Fprintln(os.Stderr, "tgsignin:", err)
		os.Exit(1)
	}
}

func run(bin, issuer string, n int) error {
	if issuer == "" {
		return errors.New("no -issuer: start Dex with scripts/dex/up.sh")
	}
	dir, err := os.MkdirTemp("", "tgsignin")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	authorized, _ := ssh.NewSignerFromKey(priv)
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(state, "authorized_keys"), ssh.MarshalAuthorizedKey(authorized.PublicKey()), 0o600); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("policies:\n  - {groups: [termgate-users], instances: [\"*\"]}\n"), 0o600); err != nil {
		return err
	}
	ctx := context.Background()
	g, err := gatewayproc.Start(ctx, gatewayproc.Config{Bin: bin, StateDir: state, Args: []string{"--backend", "local",
		"--config", cfg, "--oidc-issuer", issuer, "--oidc-client-id", "termgate-public", "--public-url", base,
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", port)}})
	if err != nil {
		return err
	}
	defer func() { _, _ = g.Stop(15 * time.Second) }()
	hostKey, err := g.HostKey()
	if err != nil {
		return err
	}

	var viaGW, alone []time.Duration
	for range n {
		d, _, err := gatewaySignIn(base)
		if err != nil {
			return fmt.Errorf("sign-in through the gateway: %w", err)
		}
		viaGW = append(viaGW, d)
		d, err = dexAlone(ctx, issuer)
		if err != nil {
			return fmt.Errorf("sign-in with Dex alone: %w", err)
		}
		alone = append(alone, d)
	}
	row("browser sign-in: gateway vs Dex alone", median(viaGW), median(alone))

	// A key remembered from a browser sign-in.
	_, priv2, _ := ed25519.GenerateKey(rand.Reader)
	remembered, _ := ssh.NewSignerFromKey(priv2)
	if err := sshSignIn(g.SSHAddr, base, hostKey, remembered); err != nil {
		return fmt.Errorf("ssh sign-in: %w", err)
	}
	var withKey, withSignIn []time.Duration
	for range n {
		d, err := sshWhoami(g.SSHAddr, hostKey, authorized)
		if err != nil {
			return err
		}
		withKey = append(withKey, d)
		d, err = sshWhoami(g.SSHAddr, hostKey, remembered)
		if err != nil {
			return err
		}
		withSignIn = append(withSignIn, d)
	}
	row("ssh whoami: remembered key vs authorized_keys", median(withSignIn), median(withKey))
	return nil
}

func row(what string, d, anchor time.Duration) {
	fmt.Printf("%-50s %9s vs %9s  %.2fx\n", what, d.Round(100*time.Microsecond), anchor.Round(100*time.Microsecond), float64(d)/float64(anchor))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// client is a browser stand-in: cookies, no keep-alive, redirects
// followed except to stop (a URL prefix).
func client(stop string) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if stop != "" && strings.HasPrefix(req.URL.String(), stop) {
				return http.ErrUseLastResponse
			}
			return nil
		}}
}

// dexForm posts alice's password to the Dex login form resp shows and
// returns the redirect Dex answers with.
func dexForm(c *http.Client, resp *http.Response) (string, error) {
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `name="login"`) {
		return "", fmt.Errorf("no Dex login form (%d)", resp.StatusCode)
	}
	r2, err := c.PostForm(resp.Request.URL.String(), url.Values{"login": {"bob@example.com"}, "password": {"password"}})
	if err != nil {
		return "", err
	}
	r2.Body.Close()
	return r2.Header.Get("Location"), nil
}

// gatewaySignIn signs bob in through the gateway and returns how long it
// took and the browser.
func gatewaySignIn(base string) (time.Duration, *http.Client, error) {
	c := client(base + "/")
	t0 := time.Now()
	resp, err := c.Get(base + "/login/oidc")
	if err != nil {
		return 0, nil, err
	}
	cb, err := dexForm(c, resp)
	if err != nil {
		return 0, nil, err
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r3, err := c.Get(cb)
	if err != nil {
		return 0, nil, err
	}
	r3.Body.Close()
	if r3.StatusCode != http.StatusFound || r3.Header.Get("Location") != "/" {
		return 0, nil, fmt.Errorf("callback answered %d", r3.StatusCode)
	}
	return time.Since(t0), c, nil
}

// dexAlone is the same flow with Dex alone: a client that exchanges the
// code and verifies the ID token itself.
func dexAlone(ctx context.Context, issuer string) (time.Duration, error) {
	const redirect = "http://127.0.0.1:9/callback" // never served: the code is read from the redirect
	c := client(redirect)
	t0 := time.Now()
	prov, err := gooidc.NewProvider(gooidc.ClientContext(ctx, c), issuer)
	if err != nil {
		return 0, err
	}
	o := oauth2.Config{ClientID: "termgate-public", Endpoint: prov.Endpoint(), RedirectURL: redirect, Scopes: []string{"openid", "email", "groups"}}
	verifier := oauth2.GenerateVerifier()
	resp, err := c.Get(o.AuthCodeURL("state1", gooidc.Nonce("n1"), oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		return 0, err
	}
	cb, err := dexForm(c, resp)
	if err != nil {
		return 0, err
	}
	u, err := url.Parse(cb)
	if err != nil {
		return 0, err
	}
	tok, err := o.Exchange(gooidc.ClientContext(ctx, c), u.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return 0, err
	}
	raw, _ := tok.Extra("id_token").(string)
	if _, err := prov.Verifier(&gooidc.Config{ClientID: "termgate-public"}).Verify(ctx, raw); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

var codeRE = regexp.MustCompile(`/ssh/([A-Z0-9]{4}-[A-Z0-9]{4})`)

// sshSignIn signs key in over keyboard-interactive, approving the code as
// a signed-in browser does.
func sshSignIn(addr, base string, hostKey ssh.PublicKey, key ssh.Signer) error {
	codes := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		c, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{User: "termgate", HostKeyCallback: ssh.FixedHostKey(hostKey), Timeout: 30 * time.Second,
			Auth: []ssh.AuthMethod{ssh.PublicKeys(key), ssh.KeyboardInteractive(func(_, instruction string, _ []string, _ []bool) ([]string, error) {
				if m := codeRE.FindStringSubmatch(instruction); m != nil {
					codes <- m[1]
				}
				return nil, nil
			})}})
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	var code string
	select {
	case code = <-codes:
	case err := <-done:
		return fmt.Errorf("no code: %v", err)
	}
	_, browser, err := gatewaySignIn(base)
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/ssh/"+code, nil)
	req.Header.Set("Origin", base)
	resp, err := browser.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("approval answered %d", resp.StatusCode)
	}
	return <-done
}

// sshWhoami times a connection that runs the gateway's whoami.
func sshWhoami(addr string, hostKey ssh.PublicKey, key ssh.Signer) (time.Duration, error) {
	t0 := time.Now()
	c, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{User: "termgate", Auth: []ssh.AuthMethod{ssh.PublicKeys(key)},
		HostKeyCallback: ssh.FixedHostKey(hostKey), Timeout: 10 * time.Second})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if _, err := s.Output("whoami"); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}
