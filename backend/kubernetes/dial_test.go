package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/remote"
)

// echoPod runs a busybox pod whose port 8080 echoes every connection
// (nc -ll -e cat) and returns its name.
func echoPod(t *testing.T) string {
	t.Helper()
	return runPod(t, func(p *corev1.Pod) {
		p.Spec.Containers[0].Command = []string{"sh", "-c", "nc -ll -p 8080 -e cat & exec sleep 100000"}
	})
}

// dialEcho dials the pod's echo port (through the helper, or with
// portForward through pods/portforward alone), retrying while nc is not
// listening yet.
func dialEcho(t *testing.T, b *Backend, pod string, portForward bool) remote.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel) // the helper's stream lives under ctx
	inst, err := b.Lookup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	for {
		dial := b.Dial
		if portForward {
			dial = b.portForwardDial
		}
		c, err := dial(ctx, inst, "127.0.0.1", 8080)
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			t.Fatalf("Dial: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// echoExact sends payload through c, half-closes, and checks the echo.
func echoExact(t *testing.T, c remote.Conn, payload []byte) {
	t.Helper()
	defer c.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.CloseWrite()
		}
		errc <- err
	}()
	got, err := io.ReadAll(c)
	if werr := <-errc; werr != nil {
		t.Fatalf("write: %v", werr)
	}
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if sha256.Sum256(got) != sha256.Sum256(payload) {
		t.Fatalf("echo of %d bytes came back as %d bytes, not the same", len(payload), len(got))
	}
}

func TestDialPortForward(t *testing.T) {
	t.Parallel()
	needHolder(t)
	pod := echoPod(t)
	b := clusterBackend(t, Config{})
	payload := make([]byte, 2<<20)
	_, _ = rand.Read(payload)
	echoExact(t, dialEcho(t, b, pod, false), payload)
	echoExact(t, dialEcho(t, b, pod, true), payload)
	echoExact(t, dialEcho(t, b, pod, true), []byte("second connection\n"))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inst, err := b.Lookup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	var un *remote.Unavailable
	if _, err := b.portForwardDial(ctx, inst, "10.255.255.1", 8080); !errors.As(err, &un) || !strings.Contains(un.Why, "forward to 127.0.0.1:8080") {
		t.Errorf("Dial to another host: %v, want refused naming 127.0.0.1:8080", err)
	}
	if _, err := b.portForwardDial(ctx, inst, "127.0.0.1", 8081); !errors.As(err, &un) || !strings.Contains(un.Why, "refused port 8081") {
		t.Errorf("Dial to a closed port: %v, want the kubelet's refusal", err)
	}
}

func TestDialPortForwardRBAC(t *testing.T) {
	t.Parallel()
	pod := echoPod(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var logs termtest.SyncBuffer
	noFwd := limitedBackend(t, podRules([]string{"get", "list", "watch"}, "create", "get"), &logs)
	if err := noFwd.CheckAccess(ctx); err != nil {
		t.Fatalf("CheckAccess: %v", err)
	}
	if !strings.Contains(logs.String(), "port forwarding (ssh -L, -D, -W) into pods will be refused") {
		t.Errorf("CheckAccess without pods/portforward warned nothing:\n%s", logs.String())
	}
	inst, err := noFwd.Lookup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noFwd.portForwardDial(ctx, inst, "127.0.0.1", 8080); err == nil || !strings.Contains(err.Error(), `"create" on "pods/portforward"`) {
		t.Errorf("Dial without pods/portforward: %v, want an RBAC error naming it", err)
	}

	rules := podRules([]string{"get", "list", "watch"}, "create", "get")
	rules = append(rules, rulesFor("pods/portforward", "create")...)
	fwd := limitedBackend(t, rules, nil)
	waitAllowed(t, fwd, ForwardNeeded[0])
	echoExact(t, dialEcho(t, fwd, pod, true), bytes.Repeat([]byte("least rbac "), 1000))
}
