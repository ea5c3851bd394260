package docker

import (
	"os"
	"regexp"
	"strings"
)

var (
	// /var/lib/docker/containers/<id>/hostname (and resolv.conf, hosts) are
	// bind-mounted into every container; podman uses overlay-containers/<id>.
	mountinfoID = regexp.MustCompile(`containers/([0-9a-f]{64})/`)
	// cgroup v1 ("/docker/<id>") and systemd ("docker-<id>.scope") paths.
	cgroupID   = regexp.MustCompile(`docker[-/]([0-9a-f]{64})`)
	hostnameID = regexp.MustCompile(`^[0-9a-f]{12}$`)
)

// DetectSelfID returns the ID (or 12-character ID prefix) of the container
// the gateway runs in, or "" when it does not seem to run in one. It looks at
// /proc/self/mountinfo, then /proc/self/cgroup, then a Docker-style hostname
// when /.dockerenv exists.
func DetectSelfID() string {
	return detectSelfID(os.ReadFile, os.Hostname)
}

func detectSelfID(readFile func(string) ([]byte, error), hostname func() (string, error)) string {
	if data, err := readFile("/proc/self/mountinfo"); err == nil {
		if m := mountinfoID.FindSubmatch(data); m != nil {
			return string(m[1])
		}
	}
	if data, err := readFile("/proc/self/cgroup"); err == nil {
		if m := cgroupID.FindSubmatch(data); m != nil {
			return string(m[1])
		}
	}
	if _, err := readFile("/.dockerenv"); err != nil {
		return ""
	}
	if h, err := hostname(); err == nil && hostnameID.MatchString(strings.TrimSpace(h)) {
		return strings.TrimSpace(h)
	}
	return ""
}
