package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release, stamped by `make build` (-ldflags -X
// main.version=...: git describe); "dev" in a plain go build.
var version = "dev"

// commit is the commit, stamped by `make build` too: Go's own VCS stamp
// is missing where builds run with -buildvcs=false (GOFLAGS here).
var commit = ""

// versionString is what --version prints: the release, the commit and
// whether the tree had changes (from the Go toolchain's VCS stamp), and
// the Go version.
func versionString() string {
	rev, dirty := commit, ""
	if rev == "" {
		rev = "unknown"
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && len(s.Value) >= 12:
				rev = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return fmt.Sprintf("termgate %s (commit %s%s, %s %s/%s)", version, rev, dirty, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
