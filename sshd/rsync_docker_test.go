package sshd

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/backend/docker"
	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
)

// rsync -e ssh through the gateway into images with no rsync: the real
// rsync client, the gateway's sshd, and the holder's rsync server
// (termgate-holder rsync) in a busybox container and in one with no shell.

// needRsync skips without the rsync client, unless OpenSSH is required.
func needRsync(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("rsync"); err != nil {
		if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
			t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but no rsync (apt-get install rsync): %v", err)
		}
		t.Skip("no rsync client installed")
	}
}

// newRsyncFixture is a Docker fixture whose Remote is the backend itself
// (so it serves rsync), audited into al, with a files="download" key
// named "downloader" and a logins="*" one named "anylogin" besides the
// usual ones.
func newRsyncFixture(t *testing.T, al *auditLog, mutate func(*Config)) *dockerFilesFixture {
	t.Helper()
	needRsync(t)
	bin := needDockerFiles(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	label := "termgate.sshdtest=" + hex.EncodeToString(b)
	be, err := docker.New(docker.Config{Label: label, Durable: exechost.Durable{Holder: bin}, GatewayID: "tgrsync" + hex.EncodeToString(b[:2])})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	f := newFixtureReg(t, func(c *Config) {
		c.Remote = be
		c.Audit = audit.New(&al.buf)
		if mutate != nil {
			mutate(c)
		}
	}, func(rc *sessions.Config) { rc.Backend = be })
	addKeys(t, f, map[string]string{"downloader": `files="download" `, "anylogin": `logins="*" `})
	return &dockerFilesFixture{fixture: f, label: label}
}

// addKeys adds keys (name: options) to the fixture's authorized keys.
func addKeys(t *testing.T, f *fixture, extra map[string]string) {
	t.Helper()
	all := map[string]string{}
	for k, o := range keyOptions {
		all[k] = o
	}
	for name, opts := range extra {
		s, priv := newSigner(t)
		f.keys[name], f.privs[name] = s, priv
		all[name] = opts
	}
	var ak strings.Builder
	for k, o := range all {
		fmt.Fprintf(&ak, "%s%s %s\n", o, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(f.keys[k].PublicKey()))), k)
	}
	parsed, warnings := keys.ParseAuthorizedKeys([]byte(ak.String()))
	if len(warnings) > 0 {
		t.Fatalf("authorized_keys warnings: %v", warnings)
	}
	f.auth.set(parsed)
}

// rsyncClient runs the rsync client with -e ssh through the fixture.
type rsyncClient struct {
	o *openSSHFiles
}

func newRsyncClient(t *testing.T, addr string, privs map[string]ed25519.PrivateKey) *rsyncClient {
	return &rsyncClient{o: newOpenSSHFiles(t, addr, privs)}
}

// run runs rsync ARGS with key; its output and exit status.
func (r *rsyncClient) run(key string, args ...string) (string, int) {
	r.o.t.Helper()
	rsh := fmt.Sprintf("ssh -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o LogLevel=ERROR -i %s -p %s", r.o.keyFiles[key], r.o.port)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, "rsync", append([]string{"-e", rsh}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+r.o.home)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		r.o.t.Fatalf("rsync %v did not finish: %s", args, out)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		r.o.t.Fatalf("rsync %v: %v", args, err)
	}
	return string(out), 0
}

// makeTree writes a tree that shows what -a keeps: files of several
// modes and sizes, a symlink, a subdirectory with a mode of its own, and
// mtimes in the past on all of them.
func makeTree(t *testing.T, root string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sub", "deeper"), 0o755))
	randomFile(t, filepath.Join(root, "big.bin"), 3<<20+7)
	randomFile(t, filepath.Join(root, "sub", "small.bin"), 1000)
	must(os.WriteFile(filepath.Join(root, "sub", "deeper", "empty"), nil, 0o644))
	must(os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(os.WriteFile(filepath.Join(root, "secret"), []byte("s\n"), 0o600))
	must(os.Symlink("sub/small.bin", filepath.Join(root, "link")))
	must(os.Chmod(filepath.Join(root, "sub"), 0o750))
	when := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	// Deepest first: a directory's mtime is set after its entries are.
	for i, p := range []string{"sub/deeper/empty", "sub/deeper", "sub/small.bin", "sub", "big.bin", "run.sh", "secret", "."} {
		at := when.Add(time.Duration(i) * time.Hour)
		must(os.Chtimes(filepath.Join(root, p), at, at))
	}
}

// treeListing is one line per entry under root: path, type, mode, size,
// mtime (not for symlinks: rsync's protocol 27 carries none), sha256 or
// link target.
func treeListing(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.IsDir():
			line += " " + fi.ModTime().UTC().Format(time.RFC3339)
		default:
			line += fmt.Sprintf(" %d %s %x", fi.Size(), fi.ModTime().UTC().Format(time.RFC3339), fileSum(t, p))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// containerListing is treeListing of a directory in a container, made with
// its busybox (at bb: "busybox" or "/busybox").
func containerListing(t *testing.T, name, bb, root string) string {
	t.Helper()
	// One line per entry: path, stat's octal mode and type, size, mtime
	// (seconds), and the sha256 of a regular file or a link's target.
	script := `bb=$1; cd "$2" && $bb find . | while read -r p; do
  s=$($bb stat -c '%f %s %Y' "$p")
  if [ -L "$p" ]; then echo "$p L -> $($bb readlink "$p")"
  elif [ -d "$p" ]; then echo "$p D $s"
  else echo "$p F $s $($bb sha256sum "$p" | $bb cut -d' ' -f1)"; fi
done`
	out, err := exec.Command("docker", "exec", name, bb, "sh", "-c", script, "sh", bb, root).CombinedOutput()
	if err != nil {
		t.Fatalf("list %s in %s: %v: %s", root, name, err, out)
	}
	return string(out)
}

// listingFromContainer turns containerListing's lines into treeListing's.
func listingFromContainer(t *testing.T, raw string) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(raw), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			t.Fatalf("listing line %q", l)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(f[0], "./"), ".")
		if rel == "" {
			rel = "."
		}
		switch f[1] {
		case "L":
			lines = append(lines, fmt.Sprintf("%s %v -> %s", rel, fs.ModeSymlink|0o777, f[3]))
		case "D", "F":
			var mode, size, mtime int64
			fmt.Sscanf(f[2]+" "+f[3]+" "+f[4], "%x %d %d", &mode, &size, &mtime)
			fm := fs.FileMode(mode & 0o777)
			if mode&0o4000 != 0 {
				fm |= fs.ModeSetuid
			}
			when := time.Unix(mtime, 0).UTC().Format(time.RFC3339)
			if f[1] == "D" {
				lines = append(lines, fmt.Sprintf("%s %v %s", rel, fm|fs.ModeDir, when))
			} else {
				lines = append(lines, fmt.Sprintf("%s %v %d %s %s", rel, fm, size, when, f[5]))
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestRsyncDockerNoRsync: rsync -a of a tree up into a busybox container
// (no rsync in it) and back down, then into one with no shell at all:
// byte-exact, with modes, mtimes (directories' too) and the symlink as -a
// keeps them; relative paths are the home's; each transfer is audited.
func TestRsyncDockerNoRsync(t *testing.T) {
	al := &auditLog{}
	d := newRsyncFixture(t, al, nil)
	rc := newRsyncClient(t, d.addr, d.privs)
	src := filepath.Join(t.TempDir(), "src")
	makeTree(t, src)
	want := treeListing(t, src)

	name := d.startContainer(t, "rsync")
	target := name + "@127.0.0.1"
	if out, code := rc.run("admin", "-a", src+"/", target+":/tmp/up/"); code != 0 {
		t.Fatalf("rsync up: status %d: %s", code, out)
	}
	if got := listingFromContainer(t, containerListing(t, name, "busybox", "/tmp/up")); got != want {
		t.Fatalf("uploaded tree:\n%s\nwant:\n%s", got, want)
	}
	ev := al.wait(t, audit.Transfer, map[string]any{"instance": name, "protocol": "rsync", "direction": "upload", "path": "/tmp/up/", "result": "ok", "exit_code": 0})
	if n, _ := ev["bytes_in"].(float64); n < 3<<20 || ev["bytes"] != ev["bytes_in"] {
		t.Errorf("audit record: bytes_in %v, want the tree's size at least", ev["bytes_in"])
	}

	down := filepath.Join(t.TempDir(), "down")
	if out, code := rc.run("admin", "-a", target+":/tmp/up/", down+"/"); code != 0 {
		t.Fatalf("rsync down: status %d: %s", code, out)
	}
	if got := treeListing(t, down); got != want {
		t.Fatalf("downloaded tree:\n%s\nwant:\n%s", got, want)
	}
	ev = al.wait(t, audit.Transfer, map[string]any{"instance": name, "protocol": "rsync", "direction": "download", "result": "ok"})
	if n, _ := ev["bytes_out"].(float64); n < 3<<20 || ev["bytes"] != ev["bytes_out"] {
		t.Errorf("audit record: bytes_out %v, want the tree's size at least", ev["bytes_out"])
	}

	// A relative path is the login's home (root's: /root), both ways.
	if out, code := rc.run("admin", "-a", src, target+":rel"); code != 0 {
		t.Fatalf("rsync up to a relative path: status %d: %s", code, out)
	}
	if got := listingFromContainer(t, containerListing(t, name, "busybox", "/root/rel/src")); got != want {
		t.Fatalf("tree uploaded to rel:\n%s\nwant:\n%s", got, want)
	}
	back := filepath.Join(t.TempDir(), "back")
	if out, code := rc.run("admin", "-a", target+":rel/src", back); code != 0 {
		t.Fatalf("rsync down from a relative path: status %d: %s", code, out)
	}
	if got := treeListing(t, filepath.Join(back, "src")); got != want {
		t.Fatalf("tree downloaded from rel:\n%s\nwant:\n%s", got, want)
	}

	// As another login (app@INSTANCE): its files, relative to its home.
	addAppUser(t, name)
	if out, code := rc.run("anylogin", "-a", src+"/", "app@"+target+":tree/"); code != 0 {
		t.Fatalf("rsync up as app: status %d: %s", code, out)
	}
	if got := inContainer(t, name, "stat -c '%u %g' /home/app/tree /home/app/tree/big.bin /home/app/tree/sub/small.bin | sort -u"); got != "1000 1000" {
		t.Fatalf("uploaded as app: owners %q", got)
	}
	al.wait(t, audit.Transfer, map[string]any{"instance": name, "protocol": "rsync", "login": "app", "result": "ok"})
	asApp := filepath.Join(t.TempDir(), "asapp")
	if out, code := rc.run("anylogin", "-a", "app@"+target+":tree/", asApp+"/"); code != 0 {
		t.Fatalf("rsync down as app: status %d: %s", code, out)
	}
	if got := treeListing(t, asApp); got != want {
		t.Fatalf("downloaded as app:\n%s\nwant:\n%s", got, want)
	}

	// One file to a new name is that name (rsync's get_local_name), and
	// comes back the same.
	if out, code := rc.run("admin", "-a", filepath.Join(src, "big.bin"), target+":/tmp/one.bin"); code != 0 {
		t.Fatalf("rsync one file up: status %d: %s", code, out)
	}
	wantOne := fmt.Sprintf("644 3145735 %d %x", time.Date(2021, 3, 4, 9, 6, 7, 0, time.UTC).Unix(), fileSum(t, filepath.Join(src, "big.bin")))
	if got := inContainer(t, name, "echo $(stat -c '%a %s %Y' /tmp/one.bin) $(sha256sum /tmp/one.bin | cut -d' ' -f1)"); got != wantOne {
		t.Fatalf("one file uploaded: %q, want %q", got, wantOne)
	}
	one := filepath.Join(t.TempDir(), "one")
	if out, code := rc.run("admin", "-a", target+":/tmp/one.bin", one); code != 0 {
		t.Fatalf("rsync one file down: status %d: %s", code, out)
	}
	if fileSum(t, one) != fileSum(t, filepath.Join(src, "big.bin")) {
		t.Fatal("one file: the download differs")
	}

	// No shell at all: the holder is uploaded and run by its path.
	noshell := d.startNoShell(t)
	target = noshell + "@127.0.0.1"
	if out, code := rc.run("admin", "-a", src+"/", target+":/tmp/up/"); code != 0 {
		t.Fatalf("rsync up (no shell): status %d: %s", code, out)
	}
	if got := listingFromContainer(t, containerListing(t, noshell, "/busybox", "/tmp/up")); got != want {
		t.Fatalf("uploaded tree (no shell):\n%s\nwant:\n%s", got, want)
	}
	down = filepath.Join(t.TempDir(), "down")
	if out, code := rc.run("admin", "-a", target+":/tmp/up/", down+"/"); code != 0 {
		t.Fatalf("rsync down (no shell): status %d: %s", code, out)
	}
	if got := treeListing(t, down); got != want {
		t.Fatalf("downloaded tree (no shell):\n%s\nwant:\n%s", got, want)
	}
	eventually(t, "no transfer left running", func() bool { return d.srv.remoteRunning() == 0 })
	if ps := inContainer(t, name, "ps -o args"); strings.Contains(ps, "holder-") {
		t.Fatalf("a tool is left running:\n%s", ps)
	}
}

// TestRsyncDockerRefusals: a download-only key uploads nothing (and may
// not delete what it downloads) but downloads; a read-only key and a
// gateway with file transfer off do neither; a shell's syntax and daemon
// mode are refused; every refusal says why and is audited.
func TestRsyncDockerRefusals(t *testing.T) {
	al := &auditLog{}
	d := newRsyncFixture(t, al, nil)
	rc := newRsyncClient(t, d.addr, d.privs)
	src := filepath.Join(t.TempDir(), "src")
	makeTree(t, src)
	name := d.startContainer(t, "webrsro") // web*: the watcher key's instances=
	target := name + "@127.0.0.1"
	inContainer(t, name, "mkdir -p /tmp/have && echo data > /tmp/have/f")

	if out, code := rc.run("downloader", "-a", src+"/", target+":/tmp/up/"); code == 0 || !strings.Contains(out, "download") {
		t.Fatalf("download-only upload: status %d: %s", code, out)
	}
	if out := inContainer(t, name, "ls /tmp/up 2>&1 || true"); !strings.Contains(out, "No such file") {
		t.Fatalf("the refused upload landed: %s", out)
	}
	al.wait(t, audit.Transfer, map[string]any{"instance": name, "protocol": "rsync", "direction": "upload", "result": "denied"})
	down := t.TempDir()
	if out, code := rc.run("downloader", "-a", target+":/tmp/have/", down+"/"); code != 0 {
		t.Fatalf("download-only download: status %d: %s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(down, "f")); err != nil || string(b) != "data\n" {
		t.Fatalf("downloaded: %q, %v", b, err)
	}
	if out, code := rc.run("downloader", "-a", "--remove-source-files", target+":/tmp/have/", t.TempDir()+"/"); code == 0 {
		t.Fatalf("download-only --remove-source-files: status 0: %s", out)
	}
	if out := inContainer(t, name, "cat /tmp/have/f"); out != "data" {
		t.Fatalf("--remove-source-files by a download-only key: %q", out)
	}
	if out, code := rc.run("watcher", "-a", target+":/tmp/have/", t.TempDir()+"/"); code == 0 || !strings.Contains(out, "read-only") {
		t.Fatalf("read-only key download: status %d: %s", code, out)
	}
	// Only what rsync's client sends: no shell's syntax, no daemon.
	for _, line := range []string{"rsync --server --sender -a . /tmp/have; id", "rsync --server --daemon .", "rsync --server --sender -a . '/tmp/*'"} {
		r := d.run(t, "admin", name, line)
		if r.code == 0 || !strings.Contains(r.stderr, "termgate: rsync:") {
			t.Errorf("%q: status %d, stderr %q", line, r.code, r.stderr)
		}
	}

	// What termgate's server does not implement is refused with a
	// sentence, not a hang or a crash.
	for _, opt := range []string{"-z", "-c", "--numeric-ids"} {
		if out, code := rc.run("admin", "-a", opt, src+"/", target+":/tmp/opt/"); code == 0 || !strings.Contains(out, "termgate: rsync: ") || !strings.Contains(out, "not") {
			t.Errorf("rsync %s: status %d: %s", opt, code, out)
		}
	}

	// A read-only root, /tmp a noexec tmpfs: the holder runs nowhere,
	// and busybox has no rsync: the reason and the fix.
	ro := d.startContainer(t, "rsro", "--read-only", "--tmpfs", "/tmp:noexec")
	if out, code := rc.run("admin", "-a", src+"/", ro+"@127.0.0.1:/tmp/up/"); code == 0 || !strings.Contains(out, "install rsync in the image") {
		t.Fatalf("read-only root: status %d: %s", code, out)
	}
	// Where the image has an rsync of its own, that one serves instead
	// (a stand-in here, which says it ran and with what).
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "rsync"), []byte("#!/bin/sh\necho \"the image's rsync ran: $*\" >&2\nexit 5\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	own := d.startContainer(t, "rsown", "--read-only", "--tmpfs", "/tmp:noexec", "-v", bin+":/usr/local/bin:ro")
	if out, code := rc.run("admin", "-a", src+"/", own+"@127.0.0.1:/tmp/up/"); code == 0 || !strings.Contains(out, "the image's rsync ran: --server -logDtpre.") {
		t.Fatalf("the image's own rsync: status %d: %s", code, out)
	}

	off := newRsyncFixture(t, al, func(c *Config) { c.Switches.NoFileTransfer = true })
	rcOff := newRsyncClient(t, off.addr, off.privs)
	name = off.startContainer(t, "rsyncoff")
	if out, code := rcOff.run("admin", "-a", src+"/", name+"@127.0.0.1:/tmp/up/"); code == 0 || !strings.Contains(out, "file transfer is turned off") {
		t.Fatalf("--file-transfer=false upload: status %d: %s", code, out)
	}
	if out, code := rcOff.run("admin", "-a", name+"@127.0.0.1:/etc/", t.TempDir()+"/"); code == 0 || !strings.Contains(out, "file transfer is turned off") {
		t.Fatalf("--file-transfer=false download: status %d: %s", code, out)
	}
}

// startNoShell runs a container of the image with no shell (removed at
// cleanup).
func (d *dockerFilesFixture) startNoShell(t *testing.T) string {
	t.Helper()
	const image = "termgate-test:noshell" // built by backend/docker's and e2e's tests
	if exec.Command("docker", "image", "inspect", image).Run() != nil {
		t.Skipf("no image %s (run backend/docker's TestSFTPWithoutAShell once)", image)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "rsyncnoshell-" + hex.EncodeToString(b)
	if out, err := exec.Command("docker", "run", "-d", "--init", "--network", "none", "--label", d.label, "--name", name, image).CombinedOutput(); err != nil {
		t.Fatalf("docker run: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	return name
}
