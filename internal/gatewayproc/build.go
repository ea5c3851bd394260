package gatewayproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build compiles ./cmd/termgate of the module the current directory is in
// (a test's package directory) into out.
func Build(ctx context.Context, out string) error {
	mod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(mod))
	if gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("not inside the termgate module")
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/termgate")
	build.Dir = filepath.Dir(gomod)
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/termgate: %w\n%s", err, b)
	}
	return nil
}
