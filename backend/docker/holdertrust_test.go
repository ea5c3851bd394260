package docker

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/sessions"
)

// Issue 18 H1 and H2, as the red team ran them: an unprivileged user
// (uid 1000) in an ordinary image (/ 0755, /tmp 1777) plants a holder
// binary or a listening socket at the holder's paths before the admin's
// first durable session. Neither is ever run or connected to; the session
// is held elsewhere, as root, and the log says what was refused.

// ordinaryContainer is a test container that looks like a distribution
// image to its uid-1000 user, who has a home of its own.
// It returns the holder binary this test's gateways copy in, too.
func ordinaryContainer(t *testing.T) (*holderbin.Binary, string) {
	t.Helper()
	needEngine(t)
	t.Parallel()
	bin, err := holderbin.Load()
	if err != nil {
		t.Fatal(err)
	}
	name, _ := runContainer(t, "--label", runLabel)
	dockerCLI(t, "exec", name, "sh", "-c",
		"chmod 755 /; chmod 1777 /tmp; mkdir -p -m 1777 /var/tmp; mkdir -p /home/u; chown 1000 /home/u")
	return bin, name
}

func asUser(t *testing.T, name, script string) string {
	t.Helper()
	return dockerCLI(t, "exec", "-u", "1000", name, "sh", "-c", script)
}

func TestHeldNeverRunsAPlantedBinary(t *testing.T) {
	bin, name := ordinaryContainer(t)
	// The trojan under this build's holder name, in a directory of the
	// user's own (it would leave its uid in /tmp/PWNED).
	asUser(t, name, `mkdir -m 700 /tmp/.termgate &&
		printf '#!/bin/sh\nid > /tmp/PWNED\nexit 1\n' > /tmp/.termgate/holder-`+bin.Hash+` &&
		chmod 755 /tmp/.termgate/holder-`+bin.Hash)
	b, logs := durableBackend(t, Config{})
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	inst := lookup(t, b, name)
	tm, h := startHeld(t, b, inst)
	tm.write(t, "echo U=$(id -u).\n")
	tm.expect(t, `U=0\.`, 10*time.Second)
	if out, _ := dockerExec(name, "cat /tmp/PWNED"); out != "" {
		t.Fatalf("the planted binary ran: %s", out)
	}
	if d := h.(interface{ Dir() string }).Dir(); d == "/tmp" {
		t.Fatalf("the session is held in the planted /tmp/.termgate")
	}
	if !strings.Contains(logs.String(), "cannot hold here") {
		t.Errorf("the log does not say what was refused:\n%s", logs.String())
	}
}

func TestHeldNeverAdoptsAPlantedSocket(t *testing.T) {
	bin, name := ordinaryContainer(t)
	// The genuine holder, run by the user in /tmp and /var/tmp.
	local := t.TempDir() + "/h"
	if err := os.WriteFile(local, bin.Data, 0o755); err != nil {
		t.Fatal(err)
	}
	dockerCLI(t, "cp", local, name+":/home/u/h")
	dockerCLI(t, "exec", name, "chown", "1000", "/home/u/h")
	for i, dir := range []string{"/tmp", "/var/tmp"} {
		// A key of the user's own: the gateway's is nothing they can read.
		out := asUser(t, name, "mkdir -m 700 "+dir+"/.termgate && printf '%064d\\n' 0 | /home/u/h serve --key-stdin --socket "+dir+
			"/.termgate/holder.sock --session 00000000000000a"+string(rune('a'+i))+" --env PS1=USER1000$ -- /bin/sh")
		if !strings.HasPrefix(out, "holder ") {
			t.Fatalf("the user's holder in %s: %q", dir, out)
		}
	}
	b, logs := durableBackend(t, Config{})
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	inst := lookup(t, b, name)
	// What a gateway does at start and on attach: adopt what is held.
	if p, err := b.Adopt(testContext(t), inst, ""); !errors.Is(err, sessions.ErrNotHeld) {
		if p != nil {
			_ = p.Release()
		}
		t.Fatalf("Adopt = %v, %v; want ErrNotHeld (the user's holders refused)", p, err)
	}
	if got := strings.Count(logs.String(), "refused to connect"); got < 2 {
		t.Errorf("the log says %d refusals, want one for each planted socket:\n%s", got, logs.String())
	}
	tm, h := startHeld(t, b, inst)
	tm.write(t, "echo U=$(id -u). TYPED-$((6*7))\n")
	tm.expect(t, `U=0\. TYPED-42`, 10*time.Second)
	if d := h.(interface{ Dir() string }).Dir(); d == "/tmp" || d == "/var/tmp" {
		t.Fatalf("the session is held in the user's %s/.termgate", d)
	}
	if strings.Contains(tm.output(), "USER1000") {
		t.Fatalf("the admin's session reached the user's shell: %q", tm.output())
	}
}

// dockerExec runs script as root in the container, returning its output
// and whether it succeeded.
func dockerExec(name, script string) (string, bool) {
	out, err := exec.Command("docker", "exec", name, "sh", "-c", script).Output()
	return strings.TrimSpace(string(out)), err == nil
}
