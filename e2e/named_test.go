package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// Named sessions (issue 36 item 1, CONTRACT.md "Named sessions and
// logins"): with real OpenSSH and a real engine, web+build and web+logs
// are shells of their own beside web's default session; a reset of one
// leaves the others; list names them; a reattach lands in the right one,
// with its replay; the WebSocket attaches with name=; bad names and
// logins are refused.
func TestNamedSessions(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	g := newGateway(t, options{containers: []string{"web-named"}})
	name := g.name("web-named")
	home := t.TempDir()
	start := func(args ...string) *opensshRun { t.Helper(); return g.openssh(t, sshBin, home, args...) }
	pidOf := func(r *opensshRun, tag string) string {
		t.Helper()
		r.typeIn("echo " + tag + "=$$.\n")
		return r.expect(tag + `=(\d+)\.`)[1]
	}

	def := start("-tt", name+"@127.0.0.1")
	build := start("-tt", name+"+build@127.0.0.1")
	logs := start("-tt", name+"+logs@127.0.0.1")
	pDef, pBuild, pLogs := pidOf(def, "D"), pidOf(build, "B"), pidOf(logs, "L")
	if pDef == pBuild || pDef == pLogs || pBuild == pLogs {
		t.Fatalf("shell PIDs default %s, build %s, logs %s: want three shells", pDef, pBuild, pLogs)
	}
	build.typeIn("echo BUILD-OUT-$((6*7))\n")
	build.expect(`BUILD-OUT-42`)

	// list names the sessions; GET /api/sessions carries name.
	r := start("termgate@127.0.0.1", "list")
	_ = r.stdin.Close()
	if code := r.wait(); code != 0 || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`\s+build\s+[0-9a-f]{16}\s`).MatchString(r.out.String()) ||
		!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`\s+-\s+[0-9a-f]{16}\s`).MatchString(r.out.String()) {
		t.Fatalf("list: status %d, stdout %q, stderr %q; want rows for the default session and build", code, r.out, r.errOut)
	}
	names := map[string]string{}
	for _, in := range g.sessions(t, tokAdmin) {
		if in.Instance == name {
			names[in.Name] = in.Session
		}
	}
	if len(names) != 3 || names[""] == "" || names["build"] == "" || names["logs"] == "" {
		t.Fatalf("GET /api/sessions for %s: %v, want the default session, build and logs", name, names)
	}

	// A reset of +build: a fresh shell there, the others untouched.
	rr := start("termgate@127.0.0.1", "reset", name+"+build")
	_ = rr.stdin.Close()
	if code := rr.wait(); code != 0 || !strings.Contains(rr.out.String(), "reset "+name+"+build: new session") {
		t.Fatalf("reset %s+build: status %d, stdout %q, stderr %q", name, code, rr.out, rr.errOut)
	}
	build.expect(`\[termgate\][^\r\n]*reset`)
	if got := pidOf(build, "B2"); got == pBuild {
		t.Fatalf("after its reset web+build still runs shell %s", got)
	}
	if got := pidOf(def, "D2"); got != pDef {
		t.Fatalf("a reset of +build replaced the default session's shell %s with %s", pDef, got)
	}
	if got := pidOf(logs, "L2"); got != pLogs {
		t.Fatalf("a reset of +build replaced +logs' shell %s with %s", pLogs, got)
	}
	if len(findProcesses(t, name, atoi(t, pBuild))) != 0 {
		t.Fatalf("the reset left +build's old shell %s running", pBuild)
	}

	// Detach from +logs, reattach: the same shell, its replay only.
	logs.typeIn("echo LOGS-$((5*5))-MARK\n")
	logs.expect(`LOGS-25-MARK`)
	logs.typeIn("\n~.")
	_ = logs.wait()
	again := start("-tt", name+"+logs@127.0.0.1")
	again.expect(`LOGS-25-MARK`)
	if got := pidOf(again, "L3"); got != pLogs {
		t.Fatalf("reattach to +logs landed in shell %s, want %s", got, pLogs)
	}
	if strings.Contains(again.out.String(), "BUILD-OUT") {
		t.Fatal("the replay of +logs holds +build's output")
	}

	// The WebSocket attaches to a named session with name=.
	w := g.wsQuery(t, name, "name=logs")
	w.expect(`LOGS-25-MARK`)
	if w.attached.Session != names["logs"] {
		t.Fatalf("WebSocket name=logs attached to %s, want %s", w.attached.Session, names["logs"])
	}
	code, body := g.request(t, http.MethodPost, "/api/instances/"+name+"/terminal/reset?name=logs", tokAdmin, nil)
	var reset map[string]string
	_ = json.Unmarshal(body, &reset)
	if code != http.StatusOK || reset["name"] != "logs" || reset["session"] == names["logs"] {
		t.Fatalf("POST reset?name=logs: %d %s", code, body)
	}
	if got := pidOf(def, "D3"); got != pDef {
		t.Fatalf("a reset of +logs replaced the default session's shell")
	}

	// Commands run in the instance whatever the name.
	c := start(name+"+build@127.0.0.1", "echo CMD-$((2+3))")
	_ = c.stdin.Close()
	if code := c.wait(); code != 0 || !strings.Contains(c.out.String(), "CMD-5") {
		t.Fatalf("command as %s+build: status %d, stdout %q, stderr %q", name, code, c.out, c.errOut)
	}

	// Refusals: a bad name, an empty one, a login; nothing started.
	for _, tc := range []struct{ user, want string }{
		{name + "+Bad@127.0.0.1", "invalid session name"},
		{name + "+@127.0.0.1", "empty name after '+'"},
		{"app@" + name + "@127.0.0.1", `login refused: this key may not be login "app"`},
	} {
		r := start("-tt", tc.user)
		_ = r.stdin.Close()
		if code := r.wait(); code != 1 || !strings.Contains(r.out.String()+r.errOut.String(), tc.want) {
			t.Errorf("ssh -tt %s: status %d, output %q %q; want 1 and %q", tc.user, code, r.out, r.errOut, tc.want)
		}
	}
	if code, body := g.request(t, http.MethodPost, "/api/instances/"+name+"/terminal/reset?name=Nope", tokAdmin, nil); code != http.StatusBadRequest {
		t.Errorf("POST reset?name=Nope: %d %s, want 400", code, body)
	}
	if n := len(g.sessions(t, tokAdmin)); n != 3 {
		t.Errorf("%d sessions after the refusals, want 3", n)
	}
}

// Two named sessions of one instance with --durable survive a gateway
// kill -9: each has a holder of its own, and after a restart a reattach
// to each lands in its own shell (same PID, its replay), while the
// default session goes on beside them.
func TestDurableNamedSessionsSurviveKill9(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-dn"}})
	name := d.name("web-dn")
	pids := map[string]int{}
	for _, n := range []string{"", "+build", "+logs"} {
		s := d.attach(t, keyAdmin, name+n, 100, 30)
		pids[n] = s.pid()
		s.send("echo MARK" + strings.TrimPrefix(n, "+") + "-$((40+2))")
		s.expect("MARK" + strings.TrimPrefix(n, "+") + "-42")
	}
	if pids[""] == pids["+build"] || pids["+build"] == pids["+logs"] {
		t.Fatalf("shell PIDs %v: want three shells", pids)
	}
	status, body := d.request(t, http.MethodGet, "/api/sessions", tokAdmin, nil)
	var all []struct {
		Instance, Name string
		Durable        bool
	}
	if err := json.Unmarshal(body, &all); status != http.StatusOK || err != nil {
		t.Fatalf("GET /api/sessions: %d %s", status, body)
	}
	for _, in := range all {
		if in.Instance == name && !in.Durable {
			t.Fatalf("session %q of %s is not durable: %s", in.Name, name, body)
		}
	}
	d.kill9(t)
	for n, pid := range pids {
		if !shellAlive(t, name, pid) {
			t.Fatalf("after the gateway was killed, the shell %d of %s%s is gone: %v", pid, name, n, processes(t, name))
		}
	}
	d.restart(t)
	for _, n := range []string{"+logs", "+build", ""} {
		s := d.attach(t, keyAdmin, name+n, 100, 30)
		s.expect("MARK" + strings.TrimPrefix(n, "+") + "-42") // its own replay
		if got := s.pid(); got != pids[n] {
			t.Fatalf("after the crash, %s%s is shell %d, want %d", name, n, got, pids[n])
		}
	}
	got := map[string]bool{}
	for _, in := range d.sessions(t, tokAdmin) {
		if in.Instance == name {
			got[in.Name] = true
		}
	}
	if len(got) != 3 || !got[""] || !got["build"] || !got["logs"] {
		t.Fatalf("sessions of %s after the restart: %v, want the default one, build and logs", name, got)
	}
}
