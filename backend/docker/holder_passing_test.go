package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/internal/holderbin"
)

// The attach process passes the exec's stdin and stdout to the holder
// (holder.Attach), and builds meet across an upgrade both ways: a gateway
// of this build adopting a shell held by an older build's holder (which
// takes no descriptors), and an older build's gateway (whose attach only
// copies) adopting a shell held by this build's holder. "Older build" is
// this build with -X main.fdpass=off, which is what builds before
// descriptor passing did on both sides. Each time the user's shell goes on
// (same PID, input and output work), and the holder's log says how each
// gateway is served.
func TestHeldStreamPassingMeetsOlderBuilds(t *testing.T) {
	needEngine(t)
	t.Parallel()
	oldBin := filepath.Join(t.TempDir(), "termgate-holder")
	if err := goBuild(oldBin, "-s", "-X", "main.fdpass=off"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(oldBin)
	if err != nil {
		t.Fatal(err)
	}
	name, _ := runContainer(t, "--label", runLabel)
	newer, _ := durableBackend(t, Config{})
	older, _ := durableBackend(t, Config{Durable: exechost.Durable{Holder: holderbin.New(data, "fdpass=off")}})
	inst := lookup(t, newer, name)
	holderLog := func() []string {
		out := dockerCLI(t, "exec", name, "cat", exechost.SocketIn(exechost.HolderDirs[0])+".log")
		var streams []string
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, `"gateway attached"`) {
				_, s, _ := strings.Cut(line, `"stream":"`)
				s, _, _ = strings.Cut(s, `"`)
				streams = append(streams, s)
			}
		}
		return streams
	}
	lastStream := func(want string) {
		t.Helper()
		if s := holderLog(); len(s) == 0 || s[len(s)-1] != want {
			t.Fatalf("the holder served its gateways over %q, want the last over %q", s, want)
		}
	}

	// An older build's holder, a gateway of this build.
	tm, h := startHeld(t, older, inst)
	pid := shellPID(t, tm)
	release(t, tm, h)
	tm, h = adopt(t, newer, inst)
	if got := shellPID(t, tm); got != pid {
		t.Fatalf("this build's gateway reached pid %d, want the older holder's shell %d", got, pid)
	}
	tm.write(t, "head -c 200000 /dev/zero | tr '\\0' y | wc -c\n")
	tm.expect(t, `200000`, 10*time.Second)
	lastStream("socket")
	if err := h.Kill(testContext(t)); err != nil {
		t.Fatalf("Kill through the copying attach: %v", err)
	}
	tm.waitEOF(t, 10*time.Second)

	// This build's holder: its own gateway passes the stream, an older
	// build's copies.
	tm, h = startHeld(t, newer, inst)
	pid = shellPID(t, tm)
	lastStream("passed")
	release(t, tm, h)
	tm, h = adopt(t, older, inst)
	if got := shellPID(t, tm); got != pid {
		t.Fatalf("the older gateway reached pid %d, want this holder's shell %d", got, pid)
	}
	tm.write(t, "head -c 200000 /dev/zero | tr '\\0' y | wc -c\n")
	tm.expect(t, `200000`, 10*time.Second)
	lastStream("socket")
	if err := h.Kill(testContext(t)); err != nil {
		t.Fatalf("Kill from the older gateway: %v", err)
	}
	tm.waitEOF(t, 10*time.Second)
}
