package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 38: a shell in an image with none (termgate-test:noshell: a static
// busybox at /busybox, run as the service, and no /bin/sh). The gateway
// brings its toolbox; these tests use real OpenSSH clients and Docker.

// noShellImage is the image without a shell (built as backend/docker's
// tests build it, when missing).
const noShellImage = "termgate-test:noshell"

var (
	toolboxOnce sync.Once
	toolboxErr  error
)

// needToolbox makes the toolbox (and the holder, whose kill ends a
// session's processes where there is no shell) available to the gateway
// under test: next to it, as needHolder does, and builds the image.
func needToolbox(t *testing.T) {
	t.Helper()
	needHolder(t)
	toolboxOnce.Do(func() {
		if os.Getenv("TERMGATE_E2E_BINARY") == "" { // else: make build embeds it
			root, err := moduleRoot()
			if err == nil {
				err = buildStatic(root, filepath.Join(filepath.Dir(gatewayBin), "termgate-toolbox"), "./cmd/termgate-toolbox")
			}
			if err != nil {
				toolboxErr = err
				return
			}
		}
		toolboxErr = buildNoShellImage()
	})
	if toolboxErr != nil {
		t.Fatal(toolboxErr)
	}
}

func buildNoShellImage() error {
	if exec.Command("docker", "image", "inspect", noShellImage).Run() == nil {
		return nil
	}
	script := `set -e
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 755 "$root"
mkdir -p "$root/proc" "$root/dev" "$root/sys" "$root/etc" "$root/root"
install -d -m 1777 "$root/tmp"
cp /bin/busybox "$root/busybox"
tar -C "$root" -c . | docker import --change 'CMD ["/busybox","sleep","1000000"]' - "$1" >/dev/null`
	if out, err := exec.Command("bash", "-c", script, "noshell-image", noShellImage).CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v: %s", noShellImage, err, out)
	}
	return nil
}

// noShellContainer runs a container of noShellImage with its own label
// (the gateway's fixture checks its containers with sh, which this image
// has not): the gateway is pointed at that label by the returned flags.
// Registered before the gateway, its cleanup runs after the gateway's
// stop: it checks that no marked process and no toolbox copy is left.
func noShellContainer(t *testing.T, suffix string, runArgs ...string) (name string, gatewayArgs []string) {
	t.Helper()
	needToolbox(t)
	id := randomHex(t, 4)
	name, label := "tge2e-"+id+"-"+suffix, "tge2e.tb="+id
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	run := append([]string{"run", "-d", "--init", "--network", "none", "--label", "tge2e", "--label", label, "--name", name}, runArgs...)
	if _, err := docker(ctx, append(run, noShellImage)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if running(t, name) {
			if left := nonEmptyLines(busyboxSh(t, name, markedScript)); len(left) > 0 {
				t.Errorf("after the gateway exited, %s still runs marked processes:\n%s", name, strings.Join(left, "\n"))
			}
			if left := busyboxSh(t, name, `find / -xdev -name toolbox 2>/dev/null; true`); left != "" {
				t.Errorf("a toolbox copy is left in %s: %s", name, left)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_, _ = docker(ctx, "rm", "-f", name)
	})
	return name, []string{"--instance-label", label}
}

// busyboxSh runs script with the image's busybox sh (the test's own look
// inside; the gateway never uses it).
func busyboxSh(t *testing.T, name, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	out, err := docker(ctx, "exec", name, "/busybox", "sh", "-c", busyboxPrelude+script)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// busyboxPrelude gives busybox sh the applets the scripts use (the image
// has no /bin to find them in).
const busyboxPrelude = `tr() { /busybox tr "$@"; }; ps() { /busybox ps "$@"; }; grep() { /busybox grep "$@"; }; find() { /busybox find "$@"; }
`

// aliveIn reports whether a live (non-zombie) process whose command line
// holds args runs in the container.
func aliveIn(t *testing.T, name, args string) bool {
	t.Helper()
	for _, line := range nonEmptyLines(busyboxSh(t, name, "ps -o stat,args")) {
		if !strings.HasPrefix(line, "Z") && strings.Contains(line, args) {
			return true
		}
	}
	return false
}

// TestToolboxInAnImageWithoutAShell: ssh -tt into an image with no shell
// gets the toolbox: arithmetic, ls of the instance's /, ps listing its
// service; a detach and reattach shows the screen as it was; a reset
// gives a new toolbox shell and ends what the old one started; a one-off
// command runs in it too.
func TestToolboxInAnImageWithoutAShell(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	name, args := noShellContainer(t, "web-noshell")
	g := newGateway(t, options{args: args})
	home := t.TempDir()
	start := func(args ...string) *opensshRun { t.Helper(); return g.openssh(t, sshBin, home, args...) }

	began := time.Now()
	first := start("-tt", name+"@127.0.0.1")
	first.expect(`toolbox:/[^\r\n]*[#$]`)
	t.Logf("first attach to a toolbox session: the prompt after %v", time.Since(began).Round(time.Millisecond))
	first.typeIn("echo $((6*7))\n")
	first.expect(`\r\n42\r\n`)
	first.typeIn("ls /\n")
	first.expect(`busybox`)
	first.typeIn("ps\n")
	first.expect(`/busybox sleep 1000000`)
	// ^C ends the command running (the toolbox's own sleep, and a
	// program of the instance's), not the shell.
	for _, sleep := range []string{"sleep 300", "/busybox sleep 301"} {
		first.typeIn(sleep + "\n")
		first.expect(regexp.QuoteMeta(sleep) + `\r\n`)
		first.typeIn("\x03")
		c, w := marker("intr")
		first.typeIn(c + "\n")
		first.expect(regexp.QuoteMeta(w))
	}
	first.typeIn("echo PID=$$\n")
	pid := first.expect(`PID=(\d+)`)[1]
	first.typeIn("/busybox sleep 1001 &\n")
	cmd, word := marker("tbx")
	first.typeIn(cmd + "\n")
	first.expect(regexp.QuoteMeta(word))
	eventually(t, "the toolbox's job to run", func() bool { return aliveIn(t, name, "sleep 1001") })
	first.typeIn("\n~.")
	if code := first.wait(); code != 255 {
		t.Errorf("ssh after ~.: status %d, want 255", code)
	}
	g.waitClients(t, name, 0)

	// Reattach: the screen as it was, the same toolbox shell.
	second := start("-tt", name+"@127.0.0.1")
	second.expect(regexp.QuoteMeta(word))
	second.typeIn("echo PID=$$\n")
	if again := second.expect(`PID=(\d+)`)[1]; again != pid {
		t.Errorf("after reattaching the shell is %s, want %s", again, pid)
	}

	// The session list says it runs on the toolbox.
	status, body := g.request(t, "GET", "/api/sessions", tokAdmin, nil)
	var list []struct {
		Instance string `json:"instance"`
		Toolbox  bool   `json:"toolbox"`
	}
	if err := json.Unmarshal(body, &list); status != 200 || err != nil || len(list) != 1 || list[0].Instance != name || !list[0].Toolbox {
		t.Errorf("GET /api/sessions: %d %s (%v), want the session with toolbox:true", status, body, err)
	}

	// The page's terminal is the same session.
	w := g.ws(t, tokAdmin, name)
	w.send("echo ws-$((40+2)) $$")
	if got := w.expect(`ws-42 (\d+)`)[1]; got != pid {
		t.Errorf("the WebSocket client types into shell %s, want %s", got, pid)
	}
	closeWS(w)

	// A named session is a toolbox shell of its own.
	named := start("-tt", name+"+dbg@127.0.0.1")
	named.expect(`toolbox:/[^\r\n]*[#$]`) // a screen redraw drops the prompt's trailing space
	named.typeIn("echo PID=$$\n")
	if other := named.expect(`PID=(\d+)`)[1]; other == pid {
		t.Errorf("the named session runs in the default session's shell %s", pid)
	}
	named.typeIn("exit\n")
	if code := named.wait(); code != 0 {
		t.Errorf("ssh to the named session after exit: status %d", code)
	}

	// Reset: a new toolbox shell; nothing of the old one left.
	r := start(name+"@127.0.0.1", "reset")
	_ = r.stdin.Close()
	if code := r.wait(); code != 0 {
		t.Errorf("ssh reset: status %d, stderr %q", code, r.errOut)
	}
	second.expect(`\[termgate\][^\r\n]*reset`)
	second.typeIn("echo PID=$$\n")
	if fresh := second.expect(`PID=(\d+)`)[1]; fresh == pid {
		t.Errorf("after the reset the shell is still %s", pid)
	}
	eventually(t, "the old toolbox shell and its job to end", func() bool { return !aliveIn(t, name, "sleep 1001") })
	if out := busyboxSh(t, name, "ps -o pid | grep -c '^ *"+pid+"$'; true"); out != "0" {
		t.Errorf("the old toolbox shell %s still runs after the reset", pid)
	}

	// One-off commands run in the toolbox too.
	for line, want := range map[string]string{"ls /": "busybox\n", "echo $((6*7))": "42\n", "ps": " /busybox sleep 1000000\n"} {
		r := start(name+"@127.0.0.1", line)
		_ = r.stdin.Close()
		code := r.wait()
		if code != 0 || !strings.Contains(r.out.String(), want) {
			t.Errorf("ssh %s %q: status %d, stdout %q, stderr %q; want %q", name, line, code, r.out, r.errOut, want)
		}
	}
	r = start(name+"@127.0.0.1", "exit 5")
	_ = r.stdin.Close()
	if code := r.wait(); code != 5 {
		t.Errorf("ssh %s 'exit 5': status %d, want 5", name, code)
	}
	second.typeIn("exit\n")
	_ = second.wait()
}

// TestToolboxNever: --toolbox never keeps the image without a shell
// without one (the refusal as before).
func TestToolboxNever(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	name, args := noShellContainer(t, "web-never")
	g := newGateway(t, options{args: append(args, "--toolbox", "never")})
	r := g.openssh(t, sshBin, t.TempDir(), "-tt", name+"@127.0.0.1")
	_ = r.stdin.Close()
	code := r.wait()
	if code == 0 || strings.Contains(r.out.String(), "toolbox:") || !strings.Contains(r.out.String()+r.errOut.String(), "/bin/sh") {
		t.Errorf("ssh -tt with --toolbox never: status %d, output %q %q; want a refusal and no toolbox", code, r.out, r.errOut)
	}
}

// TestToolboxWithADurableGateway: with --durable an instance without a
// shell still gets the toolbox (an ordinary session: a toolbox session is
// not held yet), and the gateway's shutdown ends it.
func TestToolboxWithADurableGateway(t *testing.T) {
	t.Parallel()
	name, args := noShellContainer(t, "web-durable")
	g := durableGateway(t, options{args: args})
	s := g.attach(t, keyAdmin, name, 80, 24)
	s.expect(`toolbox:/[^\r\n]*[#$]`)
	s.send("echo $((6*7))")
	s.expect(`\r\n42\r\n`)
	s.close()
}

// TestToolboxOnAReadOnlyRoot: where nothing can be written (a read-only
// root filesystem, no tmpfs) the toolbox cannot be copied in, and the
// client is told so and what to do.
func TestToolboxOnAReadOnlyRoot(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	name, args := noShellContainer(t, "web-ro", "--read-only")
	g := newGateway(t, options{args: args})
	r := g.openssh(t, sshBin, t.TempDir(), "-tt", name+"@127.0.0.1")
	_ = r.stdin.Close()
	code := r.wait()
	msg := r.out.String() + r.errOut.String()
	if code == 0 || !strings.Contains(msg, "has no shell, and termgate's toolbox cannot run") || !strings.Contains(msg, "read-only") || !strings.Contains(msg, "writable /tmp") {
		t.Errorf("ssh -tt into a read-only instance without a shell: status %d, output %q; want the toolbox's refusal", code, msg)
	}
}

// TestToolboxFirstAttachTime logs, in one run, how long a first attach
// takes to a toolbox session (the copy, its check and the exec included)
// and to a busybox shell: a measurement for docs/TOOLBOX.md, no bound.
func TestToolboxFirstAttachTime(t *testing.T) {
	sshBin := needOpenSSH(t)
	name, args := noShellContainer(t, "web-time")
	label := args[1]
	busybox := strings.Replace(name, "web-time", "web-time-bb", 1)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := docker(ctx, "run", "-d", "--init", "--network", "none", "--label", "tge2e", "--label", label, "--name", busybox, testImage); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_, _ = docker(ctx, "rm", "-f", busybox)
	})
	g := newGateway(t, options{args: args})
	home := t.TempDir()
	for _, inst := range []string{name, busybox, name + "+second", busybox + "+second"} {
		began := time.Now()
		r := g.openssh(t, sshBin, home, "-tt", inst+"@127.0.0.1")
		cmd, word := marker("t")
		r.typeIn(cmd + "\n")
		r.expect(regexp.QuoteMeta(word))
		t.Logf("%s: first output of a typed command after %v", inst, time.Since(began).Round(time.Millisecond))
		r.typeIn("exit\n")
		_ = r.wait()
	}
}
