package sshd

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pkg/sftp"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/backend/local"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// filesRunner is a remote.Runner of its backend's SFTP only: these tests
// need no commands or forwarding.
type filesRunner struct {
	sftp func(context.Context, sessions.Instance, remote.SFTPOptions) (remote.Conn, error)
}

func (r filesRunner) Run(context.Context, sessions.Instance, remote.Command) (remote.Process, error) {
	return nil, remote.ErrUnsupported
}

func (r filesRunner) SFTP(ctx context.Context, inst sessions.Instance, opts remote.SFTPOptions) (remote.Conn, error) {
	return r.sftp(ctx, inst, opts)
}

func (r filesRunner) Dial(context.Context, sessions.Instance, string, int) (remote.Conn, error) {
	return nil, remote.ErrUnsupported
}

// newFilesFixture is a fixture whose Remote serves the local backend's
// SFTP from dir (the shells' directory), with mutate applied after.
func newFilesFixture(t *testing.T, dir string, mutate func(*Config)) *fixture {
	t.Helper()
	var b *local.Backend
	return newFixtureReg(t, func(c *Config) {
		c.Remote = filesRunner{sftp: b.SFTP}
		if mutate != nil {
			mutate(c)
		}
	}, func(rc *sessions.Config) {
		b = local.New(local.Config{Instances: testInstances, Dir: dir})
		rc.Backend = b
	})
}

// openSSHFiles runs OpenSSH's sftp and scp against an address as the
// fixture's keys.
type openSSHFiles struct {
	t        *testing.T
	port     string
	home     string
	keyFiles map[string]string
}

func newOpenSSHFiles(t *testing.T, addr string, privs map[string]ed25519.PrivateKey) *openSSHFiles {
	t.Helper()
	for _, bin := range []string{"sftp", "scp"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
				t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but no %s: %v", bin, err)
			}
			t.Skipf("no OpenSSH %s installed", bin)
		}
	}
	_, port, _ := net.SplitHostPort(addr)
	o := &openSSHFiles{t: t, port: port, home: t.TempDir(), keyFiles: map[string]string{}}
	for name, priv := range privs {
		block, err := gossh.MarshalPrivateKey(priv, "")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(o.home, "id_"+name)
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		o.keyFiles[name] = path
	}
	return o
}

// run runs bin (sftp or scp) with key and args; its stdout and stderr
// together, and its exit status.
func (o *openSSHFiles) run(key, bin string, stdin string, args ...string) (string, int) {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	defer cancel()
	port := "-P"
	argv := append([]string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", o.keyFiles[key], port, o.port}, args...)
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Env = append(os.Environ(), "HOME="+o.home)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		o.t.Fatalf("%s %v did not finish: %s", bin, args, out)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		o.t.Fatalf("%s %v: %v", bin, args, err)
	}
	return string(out), 0
}

// randomFile writes n random bytes to path and returns their sha256.
func randomFile(t *testing.T, path string, n int) [32]byte {
	t.Helper()
	data := make([]byte, n)
	_, _ = rand.Read(data)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// TestSFTPLocalOpenSSH: sftp -b and scp (SFTP mode, -r too) through the
// gateway to the local backend move several MiB each way byte for byte,
// and every transfer leaves no op running.
func TestSFTPLocalOpenSSH(t *testing.T) {
	remoteDir, localDir := t.TempDir(), t.TempDir()
	f := newFilesFixture(t, remoteDir, nil)
	o := newOpenSSHFiles(t, f.addr, f.privs)

	up := randomFile(t, filepath.Join(localDir, "up.bin"), 5<<20+3)
	down := randomFile(t, filepath.Join(remoteDir, "down.bin"), 4<<20+1)
	batch := "put " + filepath.Join(localDir, "up.bin") + " up.bin\nget down.bin " + filepath.Join(localDir, "down.bin") + "\n"
	if out, code := o.run("admin", "sftp", batch, "-b", "-", "web1@127.0.0.1"); code != 0 {
		t.Fatalf("sftp -b: status %d: %s", code, out)
	}
	if fileSum(t, filepath.Join(remoteDir, "up.bin")) != up || fileSum(t, filepath.Join(localDir, "down.bin")) != down {
		t.Fatal("sftp: a transferred file differs")
	}

	// scp, OpenSSH's default SFTP mode, a file each way and a tree.
	if out, code := o.run("admin", "scp", "", filepath.Join(localDir, "up.bin"), "web1@127.0.0.1:scp-up.bin"); code != 0 {
		t.Fatalf("scp upload: status %d: %s", code, out)
	}
	if out, code := o.run("admin", "scp", "", "web1@127.0.0.1:down.bin", filepath.Join(localDir, "scp-down.bin")); code != 0 {
		t.Fatalf("scp download: status %d: %s", code, out)
	}
	if fileSum(t, filepath.Join(remoteDir, "scp-up.bin")) != up || fileSum(t, filepath.Join(localDir, "scp-down.bin")) != down {
		t.Fatal("scp: a transferred file differs")
	}
	tree := filepath.Join(localDir, "tree")
	if err := os.MkdirAll(filepath.Join(tree, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	leaf := randomFile(t, filepath.Join(tree, "sub", "leaf.bin"), 1<<20)
	if out, code := o.run("admin", "scp", "", "-r", tree, "web1@127.0.0.1:tree"); code != 0 {
		t.Fatalf("scp -r upload: status %d: %s", code, out)
	}
	if out, code := o.run("admin", "scp", "", "-r", "web1@127.0.0.1:tree", filepath.Join(localDir, "back")); code != 0 {
		t.Fatalf("scp -r download: status %d: %s", code, out)
	}
	if fileSum(t, filepath.Join(remoteDir, "tree", "sub", "leaf.bin")) != leaf || fileSum(t, filepath.Join(localDir, "back", "sub", "leaf.bin")) != leaf {
		t.Fatal("scp -r: a transferred file differs")
	}
	eventually(t, "no transfer left running", func() bool { return f.srv.remoteRunning() == 0 })
}

// TestSFTPRefusals: a read-only key, a gateway with file transfer off, one
// without a Remote, and a key whose instances= does not cover the name:
// each gets a reason it prints, and nothing is transferred.
func TestSFTPRefusals(t *testing.T) {
	cases := []struct {
		name, key, user, want string
		mutate                func(*Config)
	}{
		{"read-only key", "watcher", "web1", "this key is read-only", nil},
		{"file transfer off", "admin", "web1", "file transfer is turned off", func(c *Config) { c.Switches.NoFileTransfer = true }},
		{"no remote", "admin", "web1", "cannot transfer files", func(c *Config) { c.Remote = nil }},
		{"instances=", "web", "db1", "not found", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			remoteDir, localDir := t.TempDir(), t.TempDir()
			f := newFilesFixture(t, remoteDir, tc.mutate)
			o := newOpenSSHFiles(t, f.addr, f.privs)
			randomFile(t, filepath.Join(localDir, "x"), 1000)
			out, code := o.run(tc.key, "scp", "", filepath.Join(localDir, "x"), tc.user+"@127.0.0.1:x")
			if code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("scp: status %d, output %q; want a failure saying %q", code, out, tc.want)
			}
			if _, err := os.Stat(filepath.Join(remoteDir, "x")); err == nil {
				t.Fatal("the refused upload landed")
			}
			out, code = o.run(tc.key, "sftp", "ls\n", "-b", "-", tc.user+"@127.0.0.1")
			if code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("sftp: status %d, output %q; want a failure saying %q", code, out, tc.want)
			}
		})
	}
}

// sftpClient opens the sftp subsystem on a new session of c.
func sftpClient(t *testing.T, c *gossh.Client) *sftp.Client {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestSubsystem("sftp"); err != nil {
		t.Fatalf("subsystem sftp: %v", err)
	}
	sc, err := sftp.NewClientPipe(r, w)
	if err != nil {
		t.Fatalf("sftp client: %v", err)
	}
	t.Cleanup(func() { _ = sc.Close(); _ = s.Close() })
	return sc
}

// TestSFTPAuditedAndRevoked: a transfer is one audit record with the bytes
// each way and its result; revoking the key (Recheck) cuts a transfer in
// progress and frees its slot.
func TestSFTPAuditedAndRevoked(t *testing.T) {
	var trail termtest.SyncBuffer
	f := newFilesFixture(t, t.TempDir(), func(c *Config) { c.Audit = audit.New(&trail) })
	sc := sftpClient(t, f.dial(t, "web", "web1"))
	w, err := sc.Create("a.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 300<<10)); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	r, err := sc.Open("a.bin")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, r); err != nil || n != 300<<10 {
		t.Fatalf("read back %d bytes: %v", n, err)
	}
	_ = r.Close()
	_ = sc.Close()
	eventually(t, "the transfer's audit record", func() bool {
		return regexp.MustCompile(`"event":"transfer".*"result":"ok".*"bytes_in":3\d{5}`).MatchString(trail.String())
	})
	if !regexp.MustCompile(`"event":"transfer".*"path":"a.bin","direction":"upload","bytes":307200,"result":"ok"`).MatchString(trail.String()) {
		t.Fatalf("no record of the upload in the audit trail:\n%s", trail.String())
	}
	if !regexp.MustCompile(`"event":"transfer".*"path":"a.bin","direction":"download","bytes":307200,"result":"ok"`).MatchString(trail.String()) {
		t.Fatalf("no record of the download in the audit trail:\n%s", trail.String())
	}

	live := sftpClient(t, f.dial(t, "web", "web1"))
	if _, err := live.Getwd(); err != nil {
		t.Fatal(err)
	}
	f.setKeys(t, map[string]string{"admin": ""})
	f.srv.Recheck()
	eventually(t, "the revoked transfer to be cut", func() bool {
		_, err := live.Getwd()
		return err != nil && f.srv.remoteRunning() == 0
	})
	if !strings.Contains(trail.String(), `"result":"cut"`) {
		t.Fatalf("no cut transfer in the audit trail:\n%s", trail.String())
	}
}
