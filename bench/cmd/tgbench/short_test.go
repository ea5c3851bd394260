package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/gatewayproc"
)

// TestShortBench runs the benchmark in a short mode against the real
// binary and a real engine, fan-out and scale phases included: every
// metric must be measured (its numbers are not judged: performance is
// never asserted in a test). It needs Docker and the test image; without
// them it skips, unless TERMGATE_REQUIRE_DOCKER=1.
func TestShortBench(t *testing.T) {
	if testing.Short() {
		t.Skip("the benchmark runs the gateway against containers; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "termgate-test:busybox").CombinedOutput(); err != nil {
		msg := "the Docker engine or the test image termgate-test:busybox is missing (make test-image): " + strings.TrimSpace(string(out))
		if os.Getenv("TERMGATE_REQUIRE_DOCKER") == "1" {
			t.Fatal("TERMGATE_REQUIRE_DOCKER=1 but " + msg)
		}
		t.Skip(msg + " (set TERMGATE_REQUIRE_DOCKER=1 to make this a failure)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "termgate")
	if err := gatewayproc.Build(ctx, bin); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results.json")
	cfg, err := parseFlags([]string{"-termgate", bin, "-out", out, "-q", "-runs", "1", "-bytes", "200000",
		"-cpu-bytes", "200000", "-keystrokes", "10", "-attaches", "1", "-fanout", "3", "-fanout-pace-for", "1s", "-scale-clients", "6", "-slow-readers", "2",
		"-mem-sessions", "2", "-openssh=false", "-durable=false", "-timeout", "3m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if code := run(ctx, cfg); code != 0 {
		t.Errorf("tgbench exited with %d", code)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Errors {
		t.Errorf("error: %s", e)
	}
	got := map[string]bool{}
	relay := map[string]bool{}
	for _, res := range rep.Results {
		got[res.Metric] = res.Error == ""
		if res.Path == pathRelay {
			relay[res.Metric] = res.Error == "" && res.Ratio != nil // CPU may be 0 ticks on a short stream
		}
	}
	// The relay anchor (on by default) beside the direct exec, with its
	// ratio, in every phase it belongs to.
	for _, m := range relayMetrics {
		if !relay[m] {
			t.Errorf("metric %s not measured on the relay anchor", m)
		}
	}
	// The paced fan-out (on by default) beside the full-speed one.
	// And the catching-up and memory rows.
	for _, m := range append(append(append(append(append([]string{"throughput", "cpu_per_gb", "echo_p50", "attach", "attach_new", "skip_cost"}, fanoutMetrics...), pacedMetrics...), scaleMetrics...), catchupMetrics...), memMetrics...) {
		if !got[m] {
			t.Errorf("metric %s not measured", m)
		}
	}
}
