package docker

import (
	"os"
	"regexp"
	"strings"
)

var (
	// The engine bind-mounts these files into every container from the
	// container's own directory: /var/lib/docker/containers/<id>/hostname
	// (Podman: overlay-containers/<id>/userdata/hostname). The mountinfo
	// entries for these mount points, and only these, name the container
	// the process runs in; other entries may name other containers (on the
	// host, the /dev/shm of every `--ipc shareable` container is mounted
	// at /var/lib/docker/containers/<id>/mounts/shm).
	selfMountPoints = []string{"/etc/hostname", "/etc/hosts", "/etc/resolv.conf"}
	containerDirID  = regexp.MustCompile(`containers/([0-9a-f]{64})/`)
	// cgroup v1 and v2 with the cgroupfs driver ("/docker/<id>"), the
	// systemd driver ("docker-<id>.scope") and Podman ("libpod-<id>").
	cgroupID   = regexp.MustCompile(`(?:docker|libpod)[-/]([0-9a-f]{64})`)
	hostnameID = regexp.MustCompile(`^[0-9a-f]{12}$`)
)

// DetectSelfID returns the ID (or 12-character ID prefix) of the container
// the gateway runs in, or "" when it does not seem to run in one. See
// detectSelfIDs.
func DetectSelfID() string {
	if ids := detectSelfIDs(os.ReadFile, os.Hostname); len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// detectSelfIDs returns the IDs of the containers the gateway runs in, the
// innermost first: the container whose directory provides the mounts at
// /etc/hostname, /etc/hosts or /etc/resolv.conf, then every container named
// in /proc/self/cgroup (nested containers, Docker in Docker, are all
// around the gateway, so all are refused as instances). Only when neither
// names one and /.dockerenv exists is a Docker-style hostname (the first 12
// characters of the ID) taken as an ID prefix. Outside a container the
// result is empty.
func detectSelfIDs(readFile func(string) ([]byte, error), hostname func() (string, error)) []string {
	var ids []string
	add := func(id string) {
		for _, have := range ids {
			if have == id {
				return
			}
		}
		ids = append(ids, id)
	}
	if data, err := readFile("/proc/self/mountinfo"); err == nil {
		for _, id := range mountinfoSelfIDs(string(data)) {
			add(id)
		}
	}
	if data, err := readFile("/proc/self/cgroup"); err == nil {
		for _, id := range cgroupSelfIDs(string(data)) {
			add(id)
		}
	}
	if len(ids) > 0 {
		return ids
	}
	if _, err := readFile("/.dockerenv"); err != nil {
		return nil
	}
	if h, err := hostname(); err == nil && hostnameID.MatchString(strings.TrimSpace(h)) {
		return []string{strings.TrimSpace(h)}
	}
	return nil
}

// mountinfoSelfIDs returns the container IDs in the root (field 4) of the
// mounts at selfMountPoints (field 5), in that order of mount points.
func mountinfoSelfIDs(mountinfo string) []string {
	found := map[string]string{}
	for line := range strings.Lines(mountinfo) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if m := containerDirID.FindStringSubmatch(f[3]); m != nil {
			found[f[4]] = m[1]
		}
	}
	var ids []string
	for _, mp := range selfMountPoints {
		if id, ok := found[mp]; ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// cgroupSelfIDs returns the container IDs in /proc/self/cgroup, the last
// (innermost) of each line first.
func cgroupSelfIDs(cgroup string) []string {
	var ids []string
	for line := range strings.Lines(cgroup) {
		m := cgroupID.FindAllStringSubmatch(line, -1)
		for i := len(m) - 1; i >= 0; i-- {
			ids = append(ids, m[i][1])
		}
	}
	return ids
}
