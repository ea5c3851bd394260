package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/termgate/termgate/internal/gatewayproc"
	"github.com/termgate/termgate/internal/termtest"
)

// testImage is the image every test container runs (scripts/test-image.sh).
const testImage = "termgate-test:busybox"

// Set by TestMain.
var (
	// gatewayBin is the termgate binary under test.
	gatewayBin string
	// dockerSkip, when set, is why the tests that need Docker are skipped.
	dockerSkip string
)

func TestMain(m *testing.M) {
	// The tests wait on gateways, containers and clients far more than
	// they compute: four at a time, not GOMAXPROCS (two on two cores).
	termtest.ParallelAtLeast(4)
	tmp, err := os.MkdirTemp("", "termgate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	if err := setup(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		_ = os.RemoveAll(tmp)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(tmp)
		os.Exit(code)
	}))
}

// setup checks for the Docker engine, builds the test image and the
// gateway binary (unless TERMGATE_E2E_BINARY names one to test). A missing
// engine only skips the tests, unless TERMGATE_REQUIRE_DOCKER=1; a binary
// that does not build is an error.
func setup(tmp string) error {
	if err := checkDocker(); err != nil {
		if os.Getenv("TERMGATE_REQUIRE_DOCKER") == "1" {
			return fmt.Errorf("TERMGATE_REQUIRE_DOCKER=1 but %v", err)
		}
		dockerSkip = err.Error() + " (set TERMGATE_REQUIRE_DOCKER=1 to make this a failure)"
		return nil
	}
	if bin := os.Getenv("TERMGATE_E2E_BINARY"); bin != "" {
		gatewayBin = bin // test a binary built elsewhere
		return nil
	}
	gatewayBin = filepath.Join(tmp, "termgate")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return gatewayproc.Build(ctx, gatewayBin)
}

// checkDocker makes sure the engine answers and the test image exists.
func checkDocker() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("the docker CLI is not installed: install it and start the Docker engine")
	}
	if out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.APIVersion}}").CombinedOutput(); err != nil {
		return fmt.Errorf("the Docker engine is unreachable (`docker version`: %v: %s): run `bash scripts/ensure-docker.sh` (or start dockerd, or point DOCKER_HOST at a running engine)",
			err, strings.TrimSpace(string(out)))
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	script := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "test-image.sh"))
	script.Env = append(os.Environ(), "TERMGATE_TEST_IMAGE="+testImage)
	if out, err := script.CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/test-image.sh could not build %s: %v\n%s", testImage, err, out)
	}
	return nil
}

// moduleRoot is the directory of termgate's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the termgate module")
	}
	return filepath.Dir(mod), nil
}

// needDocker skips t when TestMain found no Docker engine.
func needDocker(t *testing.T) {
	t.Helper()
	if dockerSkip != "" {
		t.Skip(dockerSkip)
	}
}
