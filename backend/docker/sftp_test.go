package docker

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/remote"
)

// plainBackend is a Backend that is not durable: its tools run all the
// same.
func plainBackend(t *testing.T) *Backend {
	t.Helper()
	return newBackend(t, Config{Label: runLabel, GatewayID: "tgtest" + randomHex(3)})
}

// TestSFTPThroughTheHolder: on a Host without --durable, SFTP uploads the
// holder, serves files from the exec user's home, moves several MiB each
// way byte for byte, reuses the installed binary the next time, and leaves
// no tool running once closed.
func TestSFTPThroughTheHolder(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	b := plainBackend(t)
	inst := lookup(t, b, name)
	data := make([]byte, 6<<20+5)
	_, _ = rand.Read(data)
	for round := range 2 {
		conn, err := b.SFTP(testContext(t), inst, remote.SFTPOptions{})
		if err != nil {
			t.Fatalf("SFTP: %v", err)
		}
		c, err := sftp.NewClientPipe(conn, conn)
		if err != nil {
			t.Fatalf("sftp client: %v", err)
		}
		if wd, err := c.Getwd(); err != nil || wd != "/root" {
			t.Fatalf("working directory %q (%v), want /root", wd, err)
		}
		f, err := c.Create("up.bin")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := dockerCLI(t, "exec", name, "sha256sum", "/root/up.bin"); !strings.HasPrefix(got, hex.EncodeToString(sum[:])) {
			t.Fatalf("round %d: in the container: %s", round, got)
		}
		r, err := c.Open("/root/up.bin")
		if err != nil {
			t.Fatal(err)
		}
		back, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("round %d: downloaded %d bytes (err %v), differ", round, len(back), err)
		}
		_ = c.Close()
		if err := conn.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := dockerCLI(t, "exec", name, "sh", "-c", "ls -a /tmp | grep -c '^.termgate-upload-' || true"); n != "0" {
		t.Fatalf("%s upload directories left in /tmp", n)
	}
	for _, p := range procs(t, name) {
		if strings.Contains(p.Args, "holder-") {
			t.Fatalf("a tool is left running: %+v", p)
		}
	}
}

// TestSFTPUnavailableWhereNothingCanServe: a read-only root (with a noexec
// tmpfs) lets the holder run nowhere, and busybox has no sftp-server: the
// error says so and what to do.
func TestSFTPUnavailableWhereNothingCanServe(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel, "--read-only", "--tmpfs", "/tmp:noexec")
	b := plainBackend(t)
	_, err := b.SFTP(testContext(t), lookup(t, b, name), remote.SFTPOptions{})
	var u *remote.Unavailable
	if !errors.As(err, &u) || !strings.Contains(u.Why, "read-only") || !strings.Contains(u.Why, "openssh-sftp-server") {
		t.Fatalf("SFTP: %v, want a remote.Unavailable naming the read-only root and the fix", err)
	}
}

// TestDialThroughTheHolder: Dial reaches a listener on the container's own
// loopback (--network none), both ways with half-close; a port nothing
// listens on fails with the holder's reason.
func TestDialThroughTheHolder(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	dockerCLI(t, "exec", "-d", name, "nc", "-l", "-p", "7000", "-e", "cat")
	b := plainBackend(t)
	inst := lookup(t, b, name)
	var conn remote.Conn
	var err error
	for range 50 { // the listener starts in the background
		if conn, err = b.Dial(testContext(t), inst, "127.0.0.1", 7000); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	data := make([]byte, 3<<20)
	_, _ = rand.Read(data)
	go func() {
		_, _ = conn.Write(data)
		_ = conn.CloseWrite()
	}()
	got, err := io.ReadAll(conn)
	_ = conn.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("echoed %d bytes of %d (err %v)", len(got), len(data), err)
	}
	_, err = b.Dial(testContext(t), inst, "127.0.0.1", 7001)
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Dial to a closed port: %v, want connection refused", err)
	}
}

// TestSFTPFallsBackToTheInstancesServer: where the holder cannot run (a
// read-only root), the instance's own sftp-server serves (a stand-in at
// /usr/lib/sftp-server: testdata/sftpserver), byte for byte.
func TestSFTPFallsBackToTheInstancesServer(t *testing.T) {
	needEngine(t)
	t.Parallel()
	server := filepath.Join(t.TempDir(), "sftp-server")
	cmd := exec.Command("go", "build", "-trimpath", "-o", server, "./testdata/sftpserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in sftp-server: %v: %s", err, out)
	}
	name, _ := runContainer(t, "--label", runLabel, "--read-only", "-v", server+":/usr/lib/sftp-server:ro", "--tmpfs", "/data")
	b := plainBackend(t)
	conn, err := b.SFTP(testContext(t), lookup(t, b, name), remote.SFTPOptions{})
	if err != nil {
		t.Fatalf("SFTP: %v", err)
	}
	defer conn.Close()
	c, err := sftp.NewClientPipe(conn, conn)
	if err != nil {
		t.Fatalf("sftp client: %v", err)
	}
	defer c.Close()
	data := make([]byte, 2<<20+1)
	_, _ = rand.Read(data)
	f, err := c.Create("/data/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	sum := sha256.Sum256(data)
	if got := dockerCLI(t, "exec", name, "sha256sum", "/data/x"); !strings.HasPrefix(got, hex.EncodeToString(sum[:])) {
		t.Fatalf("in the container: %s", got)
	}
}

// scratchImage builds (once per run) an image with no shell: a static
// busybox at /busybox, and /tmp. No /bin/sh, so no launchScript.
func scratchImage(t *testing.T) string {
	t.Helper()
	const image = "termgate-test:noshell"
	if exec.Command("docker", "image", "inspect", image).Run() == nil {
		return image
	}
	root := t.TempDir()
	script := `set -e
mkdir -p "$1/proc" "$1/dev" "$1/sys" "$1/etc" "$1/root"
install -d -m 1777 "$1/tmp"
cp /bin/busybox "$1/busybox"
tar -C "$1" -c . | docker import --change 'CMD ["/busybox","sleep","1000000"]' - "$2" >/dev/null`
	if out, err := exec.Command("bash", "-c", script, "scratch-image", root, image).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v: %s", image, err, out)
	}
	return image
}

// runScratch runs a container of scratchImage (removed when t ends).
func runScratch(t *testing.T) string {
	t.Helper()
	image := scratchImage(t)
	name := "tgtest-" + randomHex(6)
	dockerCLI(t, "run", "-d", "--init", "--network", "none", "--label", runLabel, "--name", name, image)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	return name
}

// TestSFTPWithoutAShell: in an image with no /bin/sh (FROM scratch and a
// static program), the holder is uploaded afresh and run by its path; it
// serves, installs itself, and leaves no upload directory behind.
func TestSFTPWithoutAShell(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name := runScratch(t)
	b := plainBackend(t)
	inst := lookup(t, b, name)
	data := make([]byte, 3<<20+1)
	_, _ = rand.Read(data)
	for round := range 2 {
		conn, err := b.SFTP(testContext(t), inst, remote.SFTPOptions{})
		if err != nil {
			t.Fatalf("round %d: SFTP: %v", round, err)
		}
		c, err := sftp.NewClientPipe(conn, conn)
		if err != nil {
			t.Fatalf("sftp client: %v", err)
		}
		f, err := c.Create("/tmp/x")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		r, err := c.Open("/tmp/x")
		if err != nil {
			t.Fatal(err)
		}
		back, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("round %d: read back %d bytes (err %v), differ", round, len(back), err)
		}
		_ = c.Close()
		_ = conn.Close()
	}
	if out := dockerCLI(t, "exec", name, "/busybox", "ls", "-a", "/tmp"); strings.Contains(out, ".termgate-upload-") {
		t.Fatalf("upload directories left in /tmp:\n%s", out)
	}
}
