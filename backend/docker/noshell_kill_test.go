package docker

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/remote"
)

// TestCommandWithoutAShellLeavesNothing: in an image with no /bin/sh the
// kill script cannot run, so closing a command (its client went away)
// runs the holder's kill instead: the command and the job it started in
// the background both end, and an unrelated process lives on (ps in the
// container).
func TestCommandWithoutAShellLeavesNothing(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name := runScratch(t)
	dockerCLI(t, "exec", "-d", name, "/busybox", "sleep", "5151")
	// --toolbox never: words run directly (e2e/toolbox_test.go has the
	// toolbox's commands).
	b := newBackend(t, Config{Label: runLabel, GatewayID: "tgtest" + randomHex(3), Durable: exechost.Durable{Toolbox: exechost.ToolboxNever}})
	inst := lookup(t, b, name)

	// Words run directly (no quoting without a shell): busybox's own sh,
	// by its path, on a script with a job that clears its environment.
	dockerCLI(t, "exec", name, "/busybox", "sh", "-c",
		"printf '/busybox sleep 4343 &\\n/busybox env -i /busybox sleep 4444 &\\n/busybox sleep 4242\\n' >/tmp/job.sh")
	p, err := b.Run(testContext(t), inst, remote.Command{Line: "/busybox sh /tmp/job.sh", Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ps := func() string { return dockerCLI(t, "exec", name, "/busybox", "ps", "-o", "pid,args") }
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(ps(), "sleep 4444"); {
		if time.Now().After(deadline) {
			t.Fatalf("the command's job did not start:\n%s", ps())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("close (the kill): %v", err)
	}
	var out string
	for deadline := time.Now().Add(10 * time.Second); ; {
		out = ps()
		if !strings.Contains(out, "sleep 4242") && !strings.Contains(out, "sleep 4343") && !strings.Contains(out, "sleep 4444") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command or its job survived the close:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out, "sleep 5151") {
		t.Fatalf("an unmarked process was killed:\n%s", out)
	}
	if out := dockerCLI(t, "exec", name, "/busybox", "ls", "-a", "/tmp"); strings.Contains(out, ".termgate-upload-") {
		t.Fatalf("upload directories left in /tmp:\n%s", out)
	}
}
