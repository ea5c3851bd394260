package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// testGateway is the whole gateway run in-process by a test.
type testGateway struct {
	ssh, http string // listening addresses (http is the HTTPS one with --tls-cert)
	logs      *lockedBuffer
	// stop ends the gateway and waits for it (also run at the test's end).
	stop func()
}

// startGateway runs the gateway with args until the test ends, and returns
// once it is listening (its "termgate is listening" log line, the one
// readiness signal tests rely on).
func startGateway(t *testing.T, home string, args ...string) *testGateway {
	t.Helper()
	if home != "" {
		t.Setenv("HOME", home) // nothing seeded from the real ~/.ssh
	}
	o, err := parseFlags(append([]string{"--ssh-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	g := &testGateway{logs: &lockedBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, slog.New(slog.NewJSONHandler(g.logs, nil))) }()
	var once sync.Once
	g.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("run did not return")
			}
		})
	}
	t.Cleanup(g.stop)
	for deadline := time.Now().Add(10 * time.Second); g.ssh == ""; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("run ended before listening: %v\n%s", err, g.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line in the log:\n%s", g.logs.String())
		}
		for _, line := range strings.Split(g.logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "termgate is listening" {
				g.ssh, _ = m["ssh"].(string)
				g.http, _ = m["http"].(string)
				if a, ok := m["https"].(string); ok {
					g.http = a
				}
			}
		}
	}
	return g
}
