package sshd

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/termgate/termgate/backend/docker"
	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/sessions"
)

// The sftp subsystem against the Docker backend: real OpenSSH clients, the
// gateway's sshd and the holder serving SFTP inside a busybox container.
// Skipped without a Docker engine, unless TERMGATE_REQUIRE_DOCKER=1.

const dockerTestImage = "termgate-test:busybox" // scripts/test-image.sh

var testHolder struct {
	once sync.Once
	bin  *holderbin.Binary
	err  error
	dir  string
}

// needDockerFiles skips without an engine and the test image, and returns
// the holder binary, built once per test process.
func needDockerFiles(t *testing.T) *holderbin.Binary {
	t.Helper()
	if out, err := exec.Command("docker", "image", "inspect", "-f", "ok", dockerTestImage).CombinedOutput(); err != nil {
		if os.Getenv("TERMGATE_REQUIRE_DOCKER") == "1" {
			t.Fatalf("TERMGATE_REQUIRE_DOCKER=1 but no engine or test image (make test-image): %v: %s", err, out)
		}
		t.Skipf("no Docker engine or test image %s (make test-image)", dockerTestImage)
	}
	testHolder.once.Do(func() {
		dir, err := os.MkdirTemp("", "termgate-sshd-holder-")
		if err != nil {
			testHolder.err = err
			return
		}
		testHolder.dir = dir
		path := filepath.Join(dir, "termgate-holder")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s", "-o", path, "../cmd/termgate-holder")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			testHolder.err = err
			t.Logf("%s", out)
			return
		}
		data, err := os.ReadFile(path)
		testHolder.bin, testHolder.err = holderbin.New(data, path), err
		_ = os.RemoveAll(dir)
	})
	if testHolder.err != nil {
		t.Fatalf("build the holder: %v", testHolder.err)
	}
	return testHolder.bin
}

// dockerFilesFixture is a fixture whose registry and Remote are a Docker
// backend limited to the containers it starts (startContainer).
type dockerFilesFixture struct {
	*fixture
	label string
}

func newDockerFilesFixture(t *testing.T) *dockerFilesFixture {
	t.Helper()
	bin := needDockerFiles(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	label := "termgate.sshdtest=" + hex.EncodeToString(b)
	be, err := docker.New(docker.Config{Label: label, Durable: exechost.Durable{Holder: bin}, GatewayID: "tgsshd" + hex.EncodeToString(b[:2])})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() }) // after the fixture's own cleanup
	f := newFixtureReg(t, func(c *Config) { c.Remote = filesRunner{sftp: be.SFTP} },
		func(rc *sessions.Config) { rc.Backend = be })
	return &dockerFilesFixture{fixture: f, label: label}
}

// startContainer runs a busybox container (removed at cleanup) named
// prefix-RANDOM, with extra docker run flags.
func (d *dockerFilesFixture) startContainer(t *testing.T, prefix string, extra ...string) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := prefix + "-" + hex.EncodeToString(b)
	args := append([]string{"run", "-d", "--init", "--network", "none", "--label", d.label, "--name", name}, extra...)
	if out, err := exec.Command("docker", append(args, dockerTestImage)...).CombinedOutput(); err != nil {
		t.Fatalf("docker run: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	return name
}

// inContainer runs a shell script in the container and returns its output.
func inContainer(t *testing.T, name, script string) string {
	t.Helper()
	out, err := exec.Command("docker", "exec", name, "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("docker exec %s %q: %v: %s", name, script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestSFTPDockerOpenSSH: sftp -b, scp and scp -r through the gateway into a
// busybox container (no sftp-server of its own: the holder serves), several
// MiB each way, checked with sha256 on both sides; a read-only key is
// refused; a read-only root gets the clear error.
func TestSFTPDockerOpenSSH(t *testing.T) {
	d := newDockerFilesFixture(t)
	o := newOpenSSHFiles(t, d.addr, d.privs)
	name := d.startContainer(t, "websftp")
	target := name + "@127.0.0.1"
	localDir := t.TempDir()
	sumIn := func(path string) string {
		t.Helper()
		f := strings.Fields(inContainer(t, name, "sha256sum "+path))
		if len(f) == 0 {
			t.Fatalf("sha256sum %s: no output", path)
		}
		return f[0]
	}
	hexSum := func(s [32]byte) string { return hex.EncodeToString(s[:]) }

	up := randomFile(t, filepath.Join(localDir, "up.bin"), 5<<20+7)
	batch := "put " + filepath.Join(localDir, "up.bin") + " /tmp/up.bin\nget /tmp/up.bin " + filepath.Join(localDir, "back.bin") + "\n"
	if out, code := o.run("admin", "sftp", batch, "-b", "-", target); code != 0 {
		t.Fatalf("sftp -b: status %d: %s", code, out)
	}
	if sumIn("/tmp/up.bin") != hexSum(up) || fileSum(t, filepath.Join(localDir, "back.bin")) != up {
		t.Fatal("sftp: a transferred file differs")
	}

	inContainer(t, name, "head -c 4194311 /dev/urandom > /root/down.bin && mkdir -p /root/tree/sub && head -c 1048576 /dev/urandom > /root/tree/sub/leaf.bin")
	if out, code := o.run("admin", "scp", "", "-r", target+":down.bin", target+":tree", localDir); code != 0 {
		t.Fatalf("scp -r download: status %d: %s", code, out)
	}
	if hexSum(fileSum(t, filepath.Join(localDir, "down.bin"))) != sumIn("/root/down.bin") ||
		hexSum(fileSum(t, filepath.Join(localDir, "tree", "sub", "leaf.bin"))) != sumIn("/root/tree/sub/leaf.bin") {
		t.Fatal("scp download: a transferred file differs")
	}
	if out, code := o.run("admin", "scp", "", "-r", filepath.Join(localDir, "up.bin"), filepath.Join(localDir, "tree"), target+":/tmp/"); code != 0 {
		t.Fatalf("scp -r upload: status %d: %s", code, out)
	}
	if sumIn("/tmp/up.bin") != hexSum(up) || sumIn("/tmp/tree/sub/leaf.bin") != sumIn("/root/tree/sub/leaf.bin") {
		t.Fatal("scp upload: a transferred file differs")
	}
	eventually(t, "no transfer left running", func() bool { return d.srv.remoteRunning() == 0 })
	if ps := inContainer(t, name, "ps -o args"); strings.Contains(ps, "holder-") {
		t.Fatalf("a tool is left running:\n%s", ps)
	}

	// A read-only key (instances="web*") may not transfer.
	if out, code := o.run("watcher", "scp", "", filepath.Join(localDir, "up.bin"), target+":/tmp/ro.bin"); code == 0 || !strings.Contains(out, "read-only") {
		t.Fatalf("read-only key: status %d, output %q", code, out)
	}

	// A read-only root, /tmp a noexec tmpfs: the holder runs nowhere and
	// busybox has no sftp-server.
	ro := d.startContainer(t, "webro", "--read-only", "--tmpfs", "/tmp:noexec")
	out, code := o.run("admin", "sftp", "ls\n", "-b", "-", ro+"@127.0.0.1")
	if code == 0 || !strings.Contains(out, "read-only") || !strings.Contains(out, "install openssh-sftp-server") {
		t.Fatalf("read-only root: status %d, output %q; want the reason and the fix", code, out)
	}
}
