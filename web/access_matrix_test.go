package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/gorilla/websocket"
	"golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/termtest"
)

// The access matrix (issue 32, contract "One decision"): credential kind ×
// listener × action, each cell allowed or refused exactly as CONTRACT.md
// says, through the real listeners: OpenSSH for SSH, HTTP and WebSocket
// for the web, a real gateway on the real Docker engine, and a signed-in
// identity from real Dex whose policies differ per instance (the mixed
// identity the round-4 red team and review found read-write over SSH).
// keys.TestOnDecide tests the decision alone; this one tests that every
// listener asks it.

// act is a column of the matrix.
type act string

const (
	actType    act = "type"    // input reaches the shell (SSH attach, WebSocket)
	actCommand act = "command" // ssh INSTANCE@HOST CMD
	actReset   act = "reset"
	actKeep    act = "keep"
	actPin     act = "pin"   // pin the session's size
	actGrant   act = "grant" // let an observer type
	actRead    act = "read"  // sftp get, GET files
	actWrite   act = "write" // sftp put, PUT files
	actForward act = "forward"
	actLogin   act = "login" // be the instance's user app (a named session over WebSocket)
)

var sshActs = []act{actType, actCommand, actReset, actKeep, actPin, actGrant, actRead, actWrite, actForward}
var webActs = []act{actType, actReset, actKeep, actPin, actGrant, actRead, actWrite}

// access is a row's expected answer: every action in allow is allowed,
// every other refused; hidden rows answer as for an unknown instance.
type access struct {
	allow  []act
	hidden bool
}

func allExcept(out ...act) access {
	var a access
	for _, x := range sshActs {
		if !slices.Contains(out, x) {
			a.allow = append(a.allow, x)
		}
	}
	return a
}

var (
	full     = allExcept()
	observer = access{}
	notYours = access{hidden: true}
)

func TestAccessMatrix(t *testing.T) {
	t.Parallel()
	needDocker(t)
	issuer := needOIDC(t)
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatal("no OpenSSH client")
	}
	// Files and forwarding run the holder in the instance.
	holderEnv := []string{"TERMGATE_HOLDER_BINARY=" + buildHolder(t)}
	// alice (termgate-users, termgate-admins): read-write on web-*,
	// read-only on db-*, download-only without forwarding on dl-*.
	gw, base := startSSOGatewayEnv(t, holderEnv, issuer,
		"  - {groups: [termgate-admins], instances: [\"web-*\"]}\n"+
			"  - {groups: [termgate-users], instances: [\"db-*\"], read-only: true}\n"+
			"  - {groups: [termgate-users], instances: [\"dl-*\"], files: download, port-forwarding: false}\n"+
			"  - {groups: [termgate-admins], instances: [\"ap-*\"], logins: [app]}\n")
	web, db, dl := startInstance(t, gw.label), namedInstance(t, gw.label, "db-"), namedInstance(t, gw.label, "dl-")
	ap := namedInstance(t, gw.label, "ap-")

	m := &matrix{t: t, gw: gw, base: base}
	keyFor := func(options string) string {
		path, line := newKeyLine(t)
		m.authorize(options + line)
		return path
	}
	adminKey := keyFor("")
	m.adminKey = adminKey
	roKey, dlKey := keyFor("read-only "), keyFor(`files="download" `)
	nopfKey, limKey := keyFor("no-port-forwarding "), keyFor(`instances="web-*" `)
	adminTok := m.firstToken()
	roTok, dlTok := m.addToken("read-only"), m.addToken("files=download")
	appKey, appTok := keyFor(`logins="app" `), m.addToken("logins=app")
	// One wait for the last key and token written: each probe with a
	// token not yet loaded is a failed login, which the gateway counts.
	m.waitReload(appKey, appTok)

	// Alice signs in in a browser (here an HTTP client through Dex's
	// form) and approves a new key over SSH.
	alice := m.signIn("alice@example.com")
	aliceKey := m.approveKey(alice)

	// Every instance has a session, so keep and pin have one to act on.
	for _, inst := range []string{web, db, dl} {
		if out, err := m.ssh(adminKey, "termgate", "reset "+inst); err != nil {
			t.Fatalf("reset %s as admin: %v %s", inst, err, out)
		}
	}

	sshRows := []struct {
		cred, key, inst string
		want            access
	}{
		{"key", adminKey, web, full},
		{"read-only key", roKey, web, observer},
		{"download-only key", dlKey, web, allExcept(actWrite)},
		{"no-port-forwarding key", nopfKey, web, allExcept(actForward)},
		{"key outside instances=", limKey, db, notYours},
		{"sign-in, read-write rule", aliceKey, web, full},
		{"sign-in, read-only rule", aliceKey, db, observer},
		{"sign-in, download-only rule", aliceKey, dl, allExcept(actWrite, actForward)},
	}
	for _, row := range sshRows {
		t.Run("ssh/"+row.cred, func(t *testing.T) {
			for _, a := range sshActs {
				allowed, detail := m.sshDo(t, row.key, row.inst, a)
				want := slices.Contains(row.want.allow, a)
				if allowed != want {
					t.Errorf("%s on %s over SSH: allowed %v, want %v (%s)", a, row.inst, allowed, want, detail)
				}
				if row.want.hidden && !strings.Contains(detail, "not found") {
					t.Errorf("%s on %s over SSH: %q does not answer as an unknown instance", a, row.inst, detail)
				}
			}
		})
	}

	webRows := []struct {
		cred string
		who  webCred
		inst string
		want access
	}{
		{"token", bearer(adminTok), web, full},
		{"read-only token", bearer(roTok), web, observer},
		{"download-only token", bearer(dlTok), web, allExcept(actWrite)},
		{"sign-in, read-write rule", alice, web, full},
		{"sign-in, read-only rule", alice, db, observer},
		{"sign-in, download-only rule", alice, dl, allExcept(actWrite, actForward)},
	}
	for _, row := range webRows {
		t.Run("web/"+row.cred, func(t *testing.T) {
			for _, a := range webActs {
				allowed, detail := m.webDo(t, row.who, row.inst, a)
				if want := slices.Contains(row.want.allow, a); allowed != want {
					t.Errorf("%s on %s over HTTP/WebSocket: allowed %v, want %v (%s)", a, row.inst, allowed, want, detail)
				}
			}
		})
	}

	// Logins (issue 36 item 2): whether a credential may be the
	// instance's user app, over SSH (app@INSTANCE@HOST) and WebSocket
	// (login=app): only with logins= on a key or token, or logins: on
	// the policy rule that covers the instance; and GET /api/whoami
	// lists them for the page's picker.
	for _, inst := range []string{web, ap} {
		loginReady(t, inst)
	}
	loginSSH := []struct {
		cred, key, inst string
		want            bool
	}{
		{"key", adminKey, web, false},
		{"key with logins=app", appKey, web, true},
		{"sign-in, rule without logins", aliceKey, web, false},
		{"sign-in, rule with logins: [app]", aliceKey, ap, true},
	}
	for _, row := range loginSSH {
		t.Run("ssh/login/"+row.cred, func(t *testing.T) {
			m.seq++
			mark := fmt.Sprintf("/tmp/matrix-login-%d", m.seq)
			out, err := m.ssh(row.key, "app@"+row.inst, "touch "+mark)
			if allowed := err == nil && owner(row.inst, mark) == "app"; allowed != row.want {
				t.Errorf("app@%s over SSH: allowed %v, want %v (%v %s)", row.inst, allowed, row.want, err, out)
			}
			if !row.want && !strings.Contains(out, "login refused") {
				t.Errorf("app@%s over SSH: %q does not say the login is refused", row.inst, out)
			}
		})
	}
	loginWeb := []struct {
		cred   string
		who    webCred
		inst   string
		want   bool
		logins string // GET /api/whoami's
	}{
		{"token", bearer(adminTok), web, false, `[]`},
		{"token with logins=app", bearer(appTok), web, true, `["app"]`},
		{"sign-in, rule without logins", alice, web, false, `["app"]`},
		{"sign-in, rule with logins: [app]", alice, ap, true, `["app"]`},
	}
	for _, row := range loginWeb {
		t.Run("web/login/"+row.cred, func(t *testing.T) {
			m.seq++
			mark := fmt.Sprintf("/tmp/matrix-login-web-%d", m.seq)
			allowed, detail := m.wsDo(t, row.who, row.inst, actLogin, mark)
			if allowed != row.want {
				t.Errorf("login=app on %s over WebSocket: allowed %v, want %v (%s)", row.inst, allowed, row.want, detail)
			}
			if !row.want && !strings.Contains(detail, "login refused") {
				t.Errorf("login=app on %s over WebSocket: %q does not say the login is refused", row.inst, detail)
			}
			code, body := m.http(row.who, "GET", "/api/whoami", nil)
			var me struct{ Logins json.RawMessage }
			if err := json.Unmarshal([]byte(body), &me); code != http.StatusOK || err != nil || string(me.Logins) != row.logins {
				t.Errorf("whoami: %d %s; want logins %s", code, body, row.logins)
			}
		})
	}
}

// loginReady gives inst the user app (uid 1000, home /home/app) unless
// its image has it (scripts/test-image.sh adds it since logins), and lets
// it run programs (images built before have a 0700 root directory).
func loginReady(t *testing.T, inst string) {
	t.Helper()
	script := `grep -q '^app:' /etc/passwd || { echo 'app:x:1000:1000:app:/home/app:/bin/sh' >>/etc/passwd; echo 'app:x:1000:' >>/etc/group; }
		chmod 755 / && mkdir -p /home/app && chown 1000:1000 /home/app`
	if out, err := exec.Command("docker", "exec", inst, "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("prepare %s for app: %v %s", inst, err, out)
	}
}

// owner is the user name owning path in inst ("" when it is missing).
func owner(inst, path string) string {
	out, err := exec.Command("docker", "exec", inst, "stat", "-c", "%U", path).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// matrix is the gateway under test and what the cells need.
type matrix struct {
	t    *testing.T
	gw   *gateway
	base string
	seq  int
	// adminKey may do everything: it checks what a cell did.
	adminKey string
}

// ---- credentials ------------------------------------------------------------

// newKeyLine makes an ed25519 key: its private key file and its
// authorized_keys line.
func newKeyLine(t *testing.T) (path, line string) {
	t.Helper()
	path = newKeyFile(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return path, string(ssh.MarshalAuthorizedKey(signer.PublicKey()))
}

func (m *matrix) authorize(line string) {
	m.t.Helper()
	f, err := os.OpenFile(filepath.Join(m.gw.state, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		m.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		m.t.Fatal(err)
	}
}

func (m *matrix) firstToken() string {
	m.t.Helper()
	b, err := os.ReadFile(filepath.Join(m.gw.state, "api_token"))
	if err != nil {
		m.t.Fatal(err)
	}
	return strings.Fields(string(b))[0]
}

// addToken appends a token line with options and returns the token.
func (m *matrix) addToken(options string) string {
	m.t.Helper()
	m.seq++
	tok := fmt.Sprintf("matrix%d-%s", m.seq, randomHex(16))
	f, err := os.OpenFile(filepath.Join(m.gw.state, "api_token"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		m.t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s matrix%d %s\n", tok, m.seq, options); err != nil {
		m.t.Fatal(err)
	}
	return tok
}

// waitReload waits until the gateway has read the key and token files
// again (it polls them every second, both in one poll). A refused ssh
// counts towards the source's lockout (5 failures), so it asks over HTTP
// until the token is taken, and only then tries ssh, at most every 1.2 s:
// polling ssh every 200 ms locked the test out when a busy gateway's poll
// came 2 s late.
func (m *matrix) waitReload(key, tok string) {
	m.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var code int
	for {
		if code, _ = m.http(bearer(tok), "GET", "/api/whoami", nil); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("the gateway did not take the new key and token: ssh not tried, HTTP %d", code)
		}
		time.Sleep(500 * time.Millisecond) // each miss counts against the lock-out
	}
	for {
		_, errSSH := m.ssh(key, "termgate", "help")
		if errSSH == nil {
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("the gateway did not take the new key and token: ssh %v, HTTP %d", errSSH, code)
		}
		time.Sleep(1200 * time.Millisecond)
	}
}

// webCred authenticates an HTTP request: a bearer token, or a signed-in
// browser's cookies (which also need the page's Origin on actions).
type webCred struct {
	token  string
	client *http.Client
}

func bearer(tok string) webCred { return webCred{token: tok} }

// signIn signs email in through Dex's form and returns its browser.
func (m *matrix) signIn(email string) webCred {
	m.t.Helper()
	c, cb := dexFlow(m.t, m.base, "", email)
	resp, err := c.Get(cb)
	if err != nil {
		m.t.Fatal(err)
	}
	resp.Body.Close()
	w := webCred{client: c}
	if code, body := m.http(w, "GET", "/api/whoami", nil); code != http.StatusOK || !strings.Contains(body, email) {
		m.t.Fatalf("signed in as %s: whoami %d %s", email, code, body)
	}
	return w
}

// approveKey runs OpenSSH with a key no authorized_keys line has, and
// approves its sign-in as the signed-in browser w (the code typed on the
// /ssh page, then Approve): the key is then remembered for that identity.
func (m *matrix) approveKey(w webCred) string {
	m.t.Helper()
	key := newKeyFile(m.t)
	out, done, _ := sshPTY(m.t, sshArgs(m.gw, key, false, "termgate@127.0.0.1", "whoami"))
	_, code := signinPrompt(m.t, out)
	status, body, ticket := typeCodeHTTP(m.t, w.client, m.base, code)
	if status != http.StatusOK || ticket == "" {
		m.t.Fatalf("typed code %s: %d %s", code, status, body)
	}
	if status, body := decideHTTP(m.t, w.client, m.base, ticket, "approve"); status != http.StatusOK {
		m.t.Fatalf("approve: %d %s", status, body)
	}
	waitPTY(m.t, out, regexp.MustCompile(`alice@example\.com \(key SHA256:`))
	waitExit(m.t, done, 10*time.Second, out, "the approved whoami")
	return key
}

// ---- the SSH cells ----------------------------------------------------------

// ssh runs OpenSSH in batch mode as user@gateway with a command line.
func (m *matrix) ssh(key, user, line string, extra ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append(sshArgs(m.gw, key, true), extra...)
	args = append(args, user+"@127.0.0.1")
	if line != "" {
		args = append(args, line)
	}
	out, err := exec.CommandContext(ctx, "ssh", args...).CombinedOutput()
	return string(out), err
}

// sshDo tries one action over SSH and says whether it was allowed, with
// what the client printed.
func (m *matrix) sshDo(t *testing.T, key, inst string, a act) (bool, string) {
	t.Helper()
	m.seq++
	mark := fmt.Sprintf("/tmp/matrix-%d", m.seq)
	switch a {
	case actType:
		return m.sshType(t, key, inst, mark)
	case actCommand:
		out, err := m.ssh(key, inst, "touch "+mark)
		return err == nil && exists(inst, mark), out
	case actReset:
		out, err := m.ssh(key, "termgate", "reset "+inst)
		return err == nil && strings.Contains(out, "new session"), out
	case actKeep:
		out, err := m.ssh(key, "termgate", "keep "+inst+" 1h")
		return err == nil && strings.Contains(out, "kept until"), out
	case actPin:
		out, err := m.ssh(key, "termgate", "size "+inst+" 81x23")
		return err == nil && strings.Contains(out, "pinned"), out
	case actGrant:
		// Nobody is watching, so an allowed grant finds no observer:
		// allowed means "not refused" here.
		out, _ := m.ssh(key, "termgate", "grant "+inst+" nobody")
		return !strings.Contains(out, "refused") && !strings.Contains(out, "not found"), out
	case actRead:
		out, err := m.sftp(key, inst, "get /etc/hostname "+filepath.Join(t.TempDir(), "got"))
		return err == nil, out
	case actWrite:
		src := filepath.Join(t.TempDir(), "up")
		if err := os.WriteFile(src, []byte("matrix\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := m.sftp(key, inst, "put "+src+" "+mark)
		return err == nil && exists(inst, mark), out
	case actForward:
		// Nothing listens on port 9 in the instance: an allowed forward
		// is dialled there and fails to connect; a refused one is
		// prohibited before any dial.
		out, _ := m.ssh(key, inst, "", "-W", "127.0.0.1:9")
		allowed := strings.Contains(out, "connect failed") || strings.Contains(out, "Connection refused")
		// ssh -R is the same decision: it listens in the instance (the
		// command then ends the connection), or the client is told the
		// forward failed.
		rout, rerr := m.ssh(key, inst, "true", "-o", "ExitOnForwardFailure=yes", "-R", "0:127.0.0.1:9")
		if listened := rerr == nil && !strings.Contains(rout, "forwarding failed"); listened != allowed {
			t.Errorf("ssh -R on %s: listened %v but ssh -W allowed %v (%s)", inst, listened, allowed, rout)
		}
		return allowed, out
	}
	t.Fatalf("no SSH cell for %s", a)
	return false, ""
}

func (m *matrix) sftp(key, inst, batch string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := sshArgs(m.gw, key, true)
	// sftp takes -P for the port, not ssh's -p.
	for i, a := range args {
		if a == "-p" {
			args[i] = "-P"
		}
	}
	cmd := exec.CommandContext(ctx, "sftp", append(append([]string{"-b", "-"}, args...), inst+"@127.0.0.1")...)
	cmd.Stdin = strings.NewReader(batch + "\n")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sshType attaches with a terminal and types a command: allowed when the
// shell runs it, refused when the gateway says the input was not sent
// (or refuses the attach).
func (m *matrix) sshType(t *testing.T, key, inst, mark string) (bool, string) {
	t.Helper()
	cmd := exec.Command("ssh", append(sshArgs(m.gw, key, true), "-tt", inst+"@127.0.0.1")...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := termtest.NewStream()
	done := make(chan error, 1)
	go func() { _, _ = io.Copy(out, f); done <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill(); <-done; f.Close() }()
	// The session runs (the test reset it): the replay comes first, or
	// a refusal.
	if m, _ := out.WaitFor(regexp.MustCompile(`(?s).+`), 0, 20*time.Second); m == nil {
		return false, "no output"
	}
	if r, _ := out.WaitFor(regexp.MustCompile(`not found|refused`), 0, 200*time.Millisecond); r != nil {
		return false, out.String()
	}
	_, _ = f.Write([]byte("touch " + mark + "\r"))
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if exists(inst, mark) {
			return true, out.String()
		}
		if strings.Contains(out.String(), "read-only") {
			// The notice comes when the input is dropped: the shell
			// never saw it.
			return exists(inst, mark), out.String()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false, out.String()
}

// exists reports whether path is a file in the instance.
func exists(inst, path string) bool {
	return exec.Command("docker", "exec", inst, "test", "-e", path).Run() == nil
}

// namedInstance runs a test container whose name starts with prefix.
func namedInstance(t *testing.T, label, prefix string) string {
	t.Helper()
	name := prefix + randomHex(3)
	out, err := exec.Command("docker", "run", "-d", "--init", "--network", "none", "--label", label, "--label", "tgweb", "--name", name, "termgate-test:busybox").CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	return name
}

// ---- the web cells ----------------------------------------------------------

// http sends one request as w (a browser's requests carry the page's
// Origin) and returns the status and body.
func (m *matrix) http(w webCred, method, path string, body []byte) (int, string) {
	m.t.Helper()
	req, err := http.NewRequest(method, m.base+path, bytes.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: noKeepAlive()}
	if w.token != "" {
		req.Header.Set("Authorization", "Bearer "+w.token)
	} else {
		req.Header.Set("Origin", m.base)
		c = w.client
	}
	resp, err := c.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// webDo tries one action over HTTP or WebSocket.
func (m *matrix) webDo(t *testing.T, w webCred, inst string, a act) (bool, string) {
	t.Helper()
	m.seq++
	mark := fmt.Sprintf("/tmp/matrix-web-%d", m.seq)
	api := "/api/instances/" + inst
	switch a {
	case actReset:
		code, body := m.http(w, "POST", api+"/terminal/reset", nil)
		return code == http.StatusOK, fmt.Sprint(code, " ", body)
	case actKeep:
		code, body := m.http(w, "POST", api+"/keep?for=1h", nil)
		return code == http.StatusOK, fmt.Sprint(code, " ", body)
	case actRead:
		code, body := m.http(w, "GET", api+"/files?path=/etc/hostname", nil)
		return code == http.StatusOK, fmt.Sprint(code, " ", body)
	case actWrite:
		code, body := m.http(w, "PUT", api+"/files?path="+url.QueryEscape(mark), []byte("matrix\n"))
		return code == http.StatusNoContent && exists(inst, mark), fmt.Sprint(code, " ", body)
	case actType, actPin, actGrant:
		return m.wsDo(t, w, inst, a, mark)
	}
	t.Fatalf("no web cell for %s", a)
	return false, ""
}

// wsDo attaches over WebSocket and types, pins or grants.
func (m *matrix) wsDo(t *testing.T, w webCred, inst string, a act, mark string) (bool, string) {
	t.Helper()
	u := "ws" + strings.TrimPrefix(m.base, "http") + "/api/instances/" + inst + "/terminal?cols=80&rows=24"
	if a == actLogin {
		u += fmt.Sprintf("&name=login%d&login=app", m.seq)
	}
	h := http.Header{}
	d := websocket.Dialer{HandshakeTimeout: 20 * time.Second}
	if w.token != "" {
		h.Set("Authorization", "Bearer "+w.token)
	} else {
		h.Set("Origin", m.base)
		d.Jar = w.client.Jar
	}
	ws, resp, err := d.Dial(u, h)
	if err != nil {
		status, body := 0, []byte(nil)
		if resp != nil {
			status = resp.StatusCode
			body, _ = io.ReadAll(resp.Body)
		}
		return false, fmt.Sprintf("dial: %v (%d %s)", err, status, body)
	}
	defer ws.Close()
	events := make(chan map[string]any, 64)
	go func() {
		defer close(events)
		for {
			typ, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if typ == websocket.TextMessage {
				var ev map[string]any
				if json.Unmarshal(b, &ev) == nil {
					events <- ev
				}
			}
		}
	}()
	next := func(want string, within time.Duration) map[string]any {
		timeout := time.After(within)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return nil
				}
				if want == "" || ev["type"] == want {
					return ev
				}
			case <-timeout:
				return nil
			}
		}
	}
	if next("attached", 20*time.Second) == nil {
		return false, "no attached event"
	}
	switch a {
	case actType:
		_ = ws.WriteMessage(websocket.BinaryMessage, []byte("touch "+mark+"\r"))
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if exists(inst, mark) {
				return true, "typed"
			}
			if ev := next("error", 100*time.Millisecond); ev != nil {
				return exists(inst, mark), fmt.Sprint(ev["message"])
			}
		}
		return false, "neither typed nor refused"
	case actLogin:
		_ = ws.WriteMessage(websocket.BinaryMessage, []byte("touch "+mark+"\r"))
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if o := owner(inst, mark); o != "" {
				return o == "app", "touched as " + o
			}
			if ev := next("error", 100*time.Millisecond); ev != nil {
				return false, fmt.Sprint(ev["message"])
			}
		}
		return false, "nothing touched"
	case actPin:
		_ = ws.WriteJSON(map[string]any{"type": "pin-size", "cols": 82, "rows": 22})
	case actGrant:
		_ = ws.WriteJSON(map[string]any{"type": "grant", "who": "nobody"})
	}
	// An error event says why; a refusal says "refused".
	if ev := next("error", 3*time.Second); ev != nil {
		msg := fmt.Sprint(ev["message"])
		return !strings.Contains(msg, "refused"), msg
	}
	if a == actPin {
		// Allowed: the pin shows in the session's size.
		out, err := m.ssh(m.adminKey, "termgate", "size "+inst)
		return err == nil && strings.Contains(out, "82x22, pinned"), out
	}
	return true, "no error"
}
