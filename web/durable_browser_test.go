package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserDurableRestart (issue 7): with --durable, the page reconnects
// by itself across a gateway restart (SIGTERM, then a new process on the
// same state directory) into the same shell, with the earlier output still
// on screen and nothing doubled.
func TestBrowserDurableRestart(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	holder := buildHolder(t)
	// The holder built above stands in for the one that `make build`
	// embeds (gatewayproc passes TERMGATE_HOLDER_BINARY on).
	gw := startGatewayEnv(t, []string{"TERMGATE_HOLDER_BINARY=" + holder}, "--durable")
	name := startInstance(t, gw.label)
	px := startProxy(t, gw.httpAddr)
	b := startBrowser(t, chromium)
	base := "http://" + px.addr()

	b.do(chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("picker")))
	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.typeKeys("sleep 1004 & echo pid=$$; echo before-$((6*7))\r")
	pid := b.waitMatch(`(?m)^pid=(\d+)\s*$`)[1]
	b.waitLine("before-42")
	first := eval[string](b, `termgate.conn.session`)
	b.shot("durable-01-before")

	gw.stop()
	b.waitFunc("the reconnecting status", `document.querySelector('#status.reconnecting') !== null`)
	b.shot("durable-02-restarting")
	gw.start()
	px.retarget(gw.httpAddr)

	// No nudge: the page's own retries find the new gateway.
	ctx, cancel := context.WithTimeout(b.ctx, 40*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#status.connected') !== null`,
		chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		b.fail("the page did not reconnect by itself within 40 s of the restart: %v (status %q)", err, b.textOf("status"))
	}
	if got := eval[string](b, `termgate.conn.session`); got != first {
		t.Errorf("after the restart the page shows session %s, want %s (the same session)", got, first)
	}
	if !eval[bool](b, `!termgate.conn.lastAttach.new && termgate.conn.lastAttach.resumed`) {
		t.Errorf("after the restart the page did not resume its session (lastAttach %s)", eval[string](b, `JSON.stringify(termgate.conn.lastAttach)`))
	}
	b.expectOnce("before-42")
	b.typeKeys("echo again-pid=$$; jobs\r")
	if got := b.waitMatch(`(?m)^again-pid=(\d+)\s*$`)[1]; got != pid {
		t.Errorf("after the restart the shell's pid is %s, want %s (the same shell)", got, pid)
	}
	b.waitMatch(`sleep 1004`)
	b.shot("durable-03-after")
	if text := b.text(); !strings.Contains(text, "before-42") {
		t.Errorf("the earlier output is gone from the screen:\n%s", text)
	}
	b.checkConsole()
	// The durable shell outlives the gateway: the instance goes with the
	// test (startInstance's cleanup).
}

// buildHolder builds the static holder program (cmd/termgate-holder) that a
// --durable gateway copies into its instances, once for the package.
func buildHolder(t *testing.T) string {
	t.Helper()
	root := moduleRoot(t)
	return holderBuild.get(t, func(ctx context.Context, out string) error {
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./cmd/termgate-holder")
		build.Dir = root
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/termgate-holder: %v\n%s", err, msg)
		}
		return nil
	}, "termgate-holder")
}
