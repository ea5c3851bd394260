package docker

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
)

// The samples in testdata/self are real (host-specific lines trimmed): the
// host's /proc/self/mountinfo with an `--ipc shareable` container running
// (its /dev/shm is mounted under containers/<id>/mounts/shm), and a
// container's mountinfo and cgroup (cgroup v1, cgroupfs driver), one of them
// in a container that joined the first one's IPC namespace. cgroup v2 lines
// are written as the kernel shows them.
func TestDetectSelfIDs(t *testing.T) {
	const (
		shareable = "48600bb78d0eb7a499dd3c61e705e4584b2ef771d7f6cd57b68c6527ec35af17" // in host-ipc-shareable.mountinfo
		inside    = "b38df64ad7c09d639afd69e65eed0ad53e4e0f6aac054cc7e886eae8fc1e74fc" // container.mountinfo, container-v1.cgroup
		joined    = "a37b187575cc03b43a1e3805dea2ae95b637a44ba28edf78dbd7a530e477cd62" // container-ipc-joined.mountinfo
	)
	id := strings.Repeat("0123456789abcdef", 4)
	outer := strings.Repeat("fedcba9876543210", 4)
	sample := func(name string) string {
		b, err := os.ReadFile("testdata/self/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if s, ok := m[name]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		}
	}
	host := func(h string) func() (string, error) { return func() (string, error) { return h, nil } }
	const (
		mi = "/proc/self/mountinfo"
		cg = "/proc/self/cgroup"
		de = "/.dockerenv"
	)
	cases := []struct {
		desc  string
		files map[string]string
		host  string
		want  []string
	}{
		{"host with an --ipc shareable container", map[string]string{mi: sample("host-ipc-shareable.mountinfo"), cg: sample("host-v1.cgroup")}, "vm", nil},
		{"host with an --ipc shareable container and /.dockerenv", map[string]string{mi: sample("host-ipc-shareable.mountinfo"), cg: sample("host-v1.cgroup"), de: ""}, "vm", nil},
		{"host, cgroup v2", map[string]string{mi: sample("host-ipc-shareable.mountinfo"), cg: "0::/user.slice/user-0.slice/session-3.scope\n"}, shareable[:12], nil},
		{"container, cgroup v1", map[string]string{mi: sample("container.mountinfo"), cg: sample("container-v1.cgroup"), de: ""}, inside[:12], []string{inside}},
		{"container, cgroup v2 namespace", map[string]string{mi: sample("container.mountinfo"), cg: "0::/\n", de: ""}, "web", []string{inside}},
		{"container in another's IPC namespace", map[string]string{mi: sample("container-ipc-joined.mountinfo"), cg: "0::/\n"}, joined[:12], []string{joined}},
		{"mountinfo, /var/lib/docker its own file system", map[string]string{mi: "1 2 0:3 /containers/" + id + "/hostname /etc/hostname rw - ext4 /dev/sdb1 rw\n"}, "x", []string{id}},
		{"podman", map[string]string{mi: "1 2 0:3 /containers/storage/overlay-containers/" + id + "/userdata/hosts /etc/hosts rw - tmpfs tmpfs rw\n"}, "x", []string{id}},
		{"cgroup v2, systemd driver", map[string]string{cg: "0::/system.slice/docker-" + id + ".scope\n"}, "x", []string{id}},
		{"cgroup v2, cgroupfs driver", map[string]string{cg: "0::/docker/" + id + "\n"}, "x", []string{id}},
		{"Docker in Docker", map[string]string{cg: "12:pids:/docker/" + outer + "/docker/" + id + "\n0::/docker/" + outer + "/docker/" + id + "\n"}, "x", []string{id, outer}},
		{"hostname in a container", map[string]string{de: "", cg: "0::/\n"}, id[:12], []string{id[:12]}},
		{"hostname outside a container", map[string]string{cg: "0::/\n"}, id[:12], nil},
		{"not a container", map[string]string{de: ""}, "vm", nil},
	}
	for _, c := range cases {
		if got := detectSelfIDs(files(c.files), host(c.host)); !slices.Equal(got, c.want) {
			t.Errorf("%s: detectSelfIDs = %q, want %q", c.desc, got, c.want)
		}
	}
}

// An `--ipc shareable` container is an instance like any other: its /dev/shm
// mount, which the host's mountinfo lists, does not make it the gateway's own
// container (issue 9 item 9: it vanished from the list and refused resets).
func TestSharedIPCContainerIsNotSelf(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, id := runContainer(t, "--ipc", "shareable", "--label", runLabel)
	b := newBackend(t, Config{Label: runLabel})
	if b.isSelf(id) {
		t.Errorf("the --ipc shareable container %s is taken for the gateway's own (detected %q)", name, b.selfIDs)
	}
	if _, err := b.Lookup(testContext(t), name); err != nil {
		t.Errorf("Lookup(%s): %v", name, err)
	}
}
