package sshd

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAgentForwardingLoginDocker: ssh -A as a login (app@INSTANCE), for
// plain and durable sessions and a one-off command: the agent socket and
// its directory are app's (0600, 0700), so the shell running as app
// reaches its agent through them.
func TestAgentForwardingLoginDocker(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "durable"}[durable], func(t *testing.T) { testAgentForwardingLogin(t, durable) })
	}
}

func testAgentForwardingLogin(t *testing.T, durable bool) {
	at := newAgentTest(t, durable)
	addAppUser(t, at.inst)
	at.setKeys(t, map[string]string{"admin": `logins="app" `})
	at.login = "app"
	sock, fp := at.startAgent(t, "one")

	a := at.attach(t, "admin", sock)
	a.send(`echo "uid=$(id -u)."; echo "sock=$SSH_AUTH_SOCK."`)
	if uid := a.expect(`uid=(\d+)\.`)[1]; uid != "1000" {
		t.Fatalf("the shell runs as uid %s, want app's 1000", uid)
	}
	sockIn := a.expect(`sock=(/tmp/\.termgate-agent-[0-9a-f]+/agent\.sock)\.`)[1]
	if got := a.agentc("list"); got != "agent-keys: "+fp {
		t.Fatalf("agentc as app in the session: %q, want key %s; output %q", got, fp, a.out.String())
	}
	a.send(`stat -c "mode=%a:%U." ` + filepath.Dir(sockIn) + " " + sockIn)
	if m := a.expect(`mode=(\d+):(\w+)\.`); m[1] != "700" || m[2] != "app" {
		t.Fatalf("socket directory: %v, want 700 app", m)
	}
	if m := a.expect(`mode=(\d+):(\w+)\.`); m[1] != "600" || m[2] != "app" {
		t.Fatalf("socket: %v, want 600 app", m)
	}
	if got := a.agentc("sign"); got != "agent-signed: "+fp {
		t.Fatalf("sign as app: %q", got)
	}

	// A one-off command as app: its own socket, app's too.
	out, code := at.run(t, "admin", sock, `id -u; stat -c "mode=%a:%U." "$(dirname "$SSH_AUTH_SOCK")" "$SSH_AUTH_SOCK"; agentc list`)
	want := regexp.MustCompile(`(?s)^1000\s+mode=700:app\.\s+mode=600:app\.\s+agent-keys: ` + regexp.QuoteMeta(fp) + `\.`)
	if code != 0 || !want.MatchString(out) {
		t.Fatalf("command as app with -A: status %d, output %q; want uid 1000, app's 0700 directory and 0600 socket, key %s", code, out, fp)
	}
	a.detach()
}

// addAppUser gives a test-image container the user app (uid 1000, home
// /home/app) unless its image has it (scripts/test-image.sh adds it since
// logins; images built before have neither app nor a root others may
// enter), as e2e's addUsers does.
func addAppUser(t *testing.T, inst string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	script := `grep -q '^app:' /etc/passwd || {
		echo 'app:x:1000:1000:app:/home/app:/bin/sh' >>/etc/passwd
		echo 'app:x:1000:' >>/etc/group
	}
	mkdir -p /home/app && chown 1000:1000 /home/app
	chmod 755 /`
	if out, err := exec.CommandContext(ctx, "docker", "exec", inst, "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("add the user app to %s: %v: %s", inst, err, strings.TrimSpace(string(out)))
	}
}
