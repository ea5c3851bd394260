package matrix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/gatewayproc"
	"github.com/termgate/termgate/internal/termtest"
)

// gatewayBin is the gateway TestMain builds, with the holder of durable
// sessions next to it (where a binary built without make finds it).
var gatewayBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tgmatrix-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	gatewayBin = filepath.Join(dir, "termgate")
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// The cells wait (a 20 s stall, engines, shells): run them all at
	// once rather than two at a time on a 2-core machine.
	termtest.ParallelAtLeast(32)
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func build(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := gatewayproc.Build(ctx, gatewayBin); err != nil {
		return err
	}
	// The holder runs in busybox images: static.
	root, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return err
	}
	b := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(dir, "termgate-holder"), "./cmd/termgate-holder")
	b.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	b.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := b.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/termgate-holder: %w\n%s", err, out)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// need fails (under TERMGATE_REQUIRE_name=1, as in CI) or skips when a
// column's engine is not here.
func need(t *testing.T, what, env string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv(env) == "1" {
		t.Fatalf("%s=1 but %s is not reachable", env, what)
	}
	t.Skipf("%s is not reachable", what)
}

func dockerHere() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := command(ctx, "docker", "image", "inspect", "termgate-test:busybox")
	return err == nil
}

// kubeconfig is the cluster's: KUBECONFIG, else scripts/k8s-cluster.sh's.
func kubeconfig() string {
	if k := os.Getenv("KUBECONFIG"); k != "" {
		return k
	}
	dir := os.Getenv("TERMGATE_K8S_DIR")
	if dir == "" {
		dir = "/var/cache/termgate-k8s"
	}
	return filepath.Join(dir, "etc", "admin.kubeconfig")
}

func kubeHere(k string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := command(ctx, "kubectl", "--kubeconfig", k, "get", "--raw", "/readyz")
	return err == nil
}
