package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Two deployments on one Docker engine (issue 18 item 5; CONTRACT.md,
// durable item 7): gateway A and gateway B run with --durable and
// different state directories, so different host keys, over the same
// container. B never sees, resets or ends A's session; A, restarted over
// its own state directory, adopts it as before.

// otherDeployment starts a second gateway over d's instances with a state
// directory of its own: the same authorized keys and tokens (so the tests'
// clients reach it) but its own host key, as another team's deployment
// on the same engine would have. It owns no container; the test's end stops
// it.
func (d *durableGW) otherDeployment(t *testing.T) *gateway {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"authorized_keys", "api_token"} {
		b, err := os.ReadFile(filepath.Join(d.stateDir, f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), b)
	}
	g := &gateway{
		t: t, stateDir: dir, prefix: d.prefix, label: d.label,
		signers: d.signers, keyFiles: d.keyFiles, tokens: d.tokens,
		http: d.http, extraArgs: d.extraArgs,
	}
	t.Cleanup(g.cleanup)
	g.start(t, d.idle)
	return g
}

func TestDurableDeploymentsStayApart(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-1"}})
	name := d.name("web-1")
	a := d.attach(t, keyAdmin, name, 80, 24)
	pid := a.pid()
	a.send("sleep 1017 &")
	a.roundTrip()
	own, ok := durableSession(t, d.gateway, name)
	if !ok || own.Durable == nil || !*own.Durable {
		t.Fatalf("A's session of %s: %+v, want a durable one", name, own)
	}

	b := d.otherDeployment(t)
	if b.hostKey.Type() == "" || string(b.hostKey.Marshal()) == string(d.hostKey.Marshal()) {
		t.Fatal("the second deployment has the first one's host key")
	}
	// B's start-up adoption met A's holder and left it alone: B lists
	// nothing of it.
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+(\S+)\s`)
	if r := b.ssh(t, keyAdmin, "whoever", "list"); r.code != 0 || row.MatchString(r.stdout) || strings.Contains(r.stdout, own.Session) {
		t.Fatalf("B's list: status %d, %q; want no session of %s", r.code, r.stdout, name)
	}
	if s, ok := durableSession(t, b, name); ok {
		t.Fatalf("B's GET /api/sessions lists %+v, A's session", s)
	}

	// B's reset of the instance gives B a session of its own and leaves
	// A's shell, its job and A's client alone.
	status, body := b.resetHTTP(t, tokAdmin, name)
	if status != http.StatusOK || body["session"] == "" || body["session"] == own.Session {
		t.Fatalf("B's reset of %s: %d %v, want 200 and a session of B's own", name, status, body)
	}
	bs := b.attach(t, keyAdmin, name, 80, 24)
	if got := bs.pid(); got == pid {
		t.Fatalf("B's client is in A's shell %d", pid)
	}
	bs.close()
	if got := a.pid(); got != pid {
		t.Fatalf("A's client is in shell %d after B's reset, want %d", got, pid)
	}
	if n := anyNotice(a); strings.Contains(n, "reset") {
		t.Fatalf("A's client was told of a reset: %q", n)
	}
	if !shellAlive(t, name, pid) || len(findProcesses(t, name, 0, "sleep 1017")) == 0 {
		t.Fatalf("A's shell %d or its job is gone after B's reset: %v", pid, processes(t, name))
	}
	if logs := b.logs.String(); !strings.Contains(logs, "holder started by another deployment; leaving it alone") {
		t.Errorf("B's log does not say it left A's holder alone:\n%s", logs)
	}
	if s, ok := durableSession(t, b, name); !ok || s.Session == own.Session {
		t.Errorf("B's GET /api/sessions: %+v, want B's own session", s)
	}

	// A restarts over its own state directory and adopts its own session.
	a.close()
	d.sigterm(t)
	d.restart(t)
	a2 := d.attach(t, keyAdmin, name, 80, 24)
	if got := a2.pid(); got != pid {
		t.Fatalf("after A's restart its client is in shell %d, want its own %d", got, pid)
	}
	expectDurable(t, d.gateway, name, own.Session, true)
	a2.close()
}
