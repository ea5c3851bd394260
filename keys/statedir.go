package keys

import (
	"os"
	"path/filepath"
)

// DefaultStateDir is where termgate keeps its generated state when
// --state-dir is not given: $XDG_STATE_HOME/termgate when that variable
// holds an absolute path, else ~/.local/state/termgate, else (no home
// directory, typically root in a minimal container) /var/lib/termgate.
func DefaultStateDir() string {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "termgate")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".local", "state", "termgate")
	}
	return "/var/lib/termgate"
}
