package main

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/gatewayproc"
	"github.com/termgate/termgate/internal/termtest"
)

// testGateway is the whole gateway run in-process by a test.
type testGateway struct {
	ssh, http string // listening addresses (http is the HTTPS one with --tls-cert)
	logs      *termtest.Stream
	// stop ends the gateway and waits for it (also run at the test's end).
	stop func()
}

// startGateway runs the gateway with args until the test ends, and returns
// once it is listening (its "termgate is listening" log line, the one
// readiness signal tests rely on, read as gatewayproc reads it from the
// binary's).
func startGateway(t *testing.T, home string, args ...string) *testGateway {
	t.Helper()
	if home != "" {
		t.Setenv("HOME", home) // nothing seeded from the real ~/.ssh
	}
	o, err := parseFlags(append([]string{"--ssh-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	g := &testGateway{logs: termtest.NewStream()}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	var runErr error // read after ended is closed
	go func() {
		defer close(ended)
		runErr = run(ctx, o, slog.New(slog.NewJSONHandler(g.logs, nil)))
	}()
	var once sync.Once
	g.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-ended:
				if runErr != nil {
					t.Errorf("run: %v", runErr)
				}
			case <-time.After(15 * time.Second):
				t.Error("run did not return")
			}
		})
	}
	t.Cleanup(g.stop)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	addrs, err := gatewayproc.WaitListening(wctx, g.logs, ended)
	if err != nil {
		t.Fatalf("%v\n%s", err, g.logs.String()) // g.stop reports run's error
	}
	g.ssh, g.http = addrs.SSHAddr, addrs.HTTPAddr
	return g
}
