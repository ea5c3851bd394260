package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release, stamped by `make build` (-ldflags -X
// main.version=...: git describe); "dev" in a plain go build.
var version = "dev"

// versionString is what --version prints: the release, the commit and
// whether the tree had changes (from the Go toolchain's VCS stamp), and
// the Go version.
func versionString() string {
	commit, dirty := "unknown", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && len(s.Value) >= 12:
				commit = s.Value[:12]
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = "-dirty"
			}
		}
	}
	return fmt.Sprintf("termgate %s (commit %s%s, %s %s/%s)", version, commit, dirty, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
