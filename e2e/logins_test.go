package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// addUsers gives a test-image container the user app (uid 1000, home
// /home/app) unless its image has it (scripts/test-image.sh adds it since
// logins; Debian's static busybox has no adduser).
func addUsers(t *testing.T, container string) {
	t.Helper()
	dockerExec(t, container, `grep -q '^app:' /etc/passwd || {
		echo 'app:x:1000:1000:app:/home/app:/bin/sh' >>/etc/passwd
		echo 'app:x:1000:' >>/etc/group
	}
	mkdir -p /home/app && chown 1000:1000 /home/app
	chmod 755 /  # images test-image.sh built before logins have a 0700 root`)
}

// Logins (issue 36 item 2, CONTRACT.md "Named sessions and logins"),
// with real OpenSSH against a real engine: commands, the shell, scp and
// sftp run as LOGIN (OpenSSH splits user and host at the last '@'); a
// key's first login is its default; a key without logins= stays the
// default user; a session runs as one login for its life; and the
// refusals: a login the key does not list (root), one the instance does
// not have, one a passwd line cannot hold.
func TestLogins(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	needHolder(t) // logins go through the holder binary
	g := newGateway(t, options{containers: []string{"web-login"}})
	name := g.name("web-login")
	addUsers(t, g.prefix+"web-login")
	run := func(key, user, line string) (string, string, int) {
		t.Helper()
		out, errOut, code := g.sshRun(t, sshBin, key, nil, user+"@127.0.0.1", line)
		return string(out), string(errOut), code
	}

	// Commands.
	for _, tc := range []struct{ key, user, want string }{
		{keyLogins, "app@" + name, "1000 /home/app"},
		{keyLogins, name, "1000 /home/app"}, // its first login
		{keyLogins, "1234@" + name, "1234 /"},
		{keyAdmin, name, "0 /"}, // no logins=: the default user, as before
	} {
		out, errOut, code := run(tc.key, tc.user, `echo "$(id -u) $PWD"`)
		if code != 0 || strings.TrimSpace(out) != tc.want {
			t.Errorf("%s as %s: status %d, %q %q; want %q", tc.key, tc.user, code, out, errOut, tc.want)
		}
	}

	// Refusals: each a message, status 1, nothing run.
	for _, tc := range []struct{ key, user, want string }{
		{keyLogins, "root@" + name, `may not be login "root"`},
		{keyAdmin, "app@" + name, `may not be login "app"`},
		{keyLogins, "bob@" + name, `there is no user "bob" in this instance`},
		{keyLogins, "a.b:c@" + name, "not a user name an instance's /etc/passwd can hold"},
	} {
		out, errOut, code := run(tc.key, tc.user, "touch /tmp/ran-"+tc.key)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s as %s: status %d, %q %q; want 1 and %q", tc.key, tc.user, code, out, errOut, tc.want)
		}
	}
	if got := dockerExec(t, g.prefix+"web-login", "ls /tmp | grep -c ran- || true"); strings.TrimSpace(got) != "0" {
		t.Errorf("a refused command ran: %q", got)
	}

	// The shell: a named session as app, its login kept for its life.
	home := t.TempDir()
	sh := g.opensshAs(t, keyLogins, waitFor, sshBin, home, "-tt", "app@"+name+"+build@127.0.0.1")
	sh.typeIn("echo WHO-$(id -un)-$(pwd)-.\n")
	sh.expect(`WHO-app-/home/app-\.`)
	// The default user may not join app's session; app may.
	other := g.opensshAs(t, keyAdmin, waitFor, sshBin, home, "-tt", name+"+build@127.0.0.1")
	_ = other.stdin.Close()
	if code := other.wait(); code != 1 || !strings.Contains(other.errOut.String()+other.out.String(), `runs as "app"`) {
		t.Errorf("default user attaching to app's session: status %d, %q %q", code, other.out, other.errOut)
	}
	list, _, _ := run(keyAdmin, "termgate", "list")
	if !strings.Contains(list, "LOGIN") || !regexp.MustCompile(`(?m)^`+name+`\s+build\s.*\sapp\b`).MatchString(list) {
		t.Errorf("list does not show the login:\n%s", list)
	}
	code, body := g.request(t, "GET", "/api/sessions", tokAdmin, nil)
	if code != 200 || !strings.Contains(string(body), `"login":"app"`) {
		t.Errorf("/api/sessions: %d %s", code, body)
	}
	who, _, _ := run(keyAdmin, "termgate", "who "+name+"+build")
	if !strings.Contains(who, "runs as app") {
		t.Errorf("who: %q", who)
	}
	sh.typeIn("exit\n")
	sh.wait()

	// Files: scp and sftp as app write files app owns, in app's home.
	_, port, _ := net.SplitHostPort(g.sshAddr)
	opts := []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", g.keyFiles[keyLogins]}
	local := filepath.Join(t.TempDir(), "up.txt")
	if err := os.WriteFile(local, []byte("hello app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scpBin, err := exec.LookPath("scp")
	if err != nil {
		t.Fatal("no scp")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	scp := exec.CommandContext(ctx, scpBin, append(opts, "-P", port, local, "app@"+name+"@127.0.0.1:scp.txt")...)
	scp.Env = sshEnv(t.TempDir())
	if b, err := scp.CombinedOutput(); err != nil {
		t.Fatalf("scp as app: %v %s", err, b)
	}
	sftpBin, err := exec.LookPath("sftp")
	if err != nil {
		t.Fatal("no sftp")
	}
	sftp := exec.CommandContext(ctx, sftpBin, append(opts, "-P", port, "-b", "-", "app@"+name+"@127.0.0.1")...)
	sftp.Env = sshEnv(t.TempDir())
	sftp.Stdin = strings.NewReader("put " + local + " sftp.txt\npwd\n")
	b, err := sftp.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "/home/app") {
		t.Fatalf("sftp as app: %v %s", err, b)
	}
	got := dockerExec(t, g.prefix+"web-login", "stat -c '%U %n' /home/app/scp.txt /home/app/sftp.txt")
	if got != "app /home/app/scp.txt\napp /home/app/sftp.txt\n" {
		t.Errorf("files written as app: %q", got)
	}
	scp = exec.CommandContext(ctx, scpBin, append(opts, "-P", port, local, "root@"+name+"@127.0.0.1:/tmp/x")...)
	scp.Env = sshEnv(t.TempDir())
	if b, err := scp.CombinedOutput(); err == nil || !strings.Contains(string(b), `may not be login "root"`) {
		t.Errorf("scp as root with a key without it: %v %s", err, b)
	}
}
