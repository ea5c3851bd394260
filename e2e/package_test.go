package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/gatewayproc"
	"github.com/termgate/termgate/internal/termtest"
)

// Issue 22 item 3: `make package` builds the Debian package; it is
// installed on this machine with dpkg, its files, modes and conffile
// checked, and the service started without systemd: the installed unit's
// ExecStart= run as its User= with its groups (setpriv), in an
// approximation of its file-system sandbox (unshare), then OpenSSH
// through it into a busybox container. As the service user the Docker
// socket answers while /root, /etc/shadow and any home cannot be read and
// / cannot be written. An upgrade keeps the edited config;
// dpkg --purge removes it all.
//
// It installs a package on the machine, so it runs only in CI (CI=true,
// a throwaway machine) or with TERMGATE_TEST_PACKAGE=1, as root; there a
// missing piece (dpkg, setpriv, Docker, OpenSSH) fails it.

const (
	debUnit    = "/usr/lib/systemd/system/termgate.service"
	debConfig  = "/etc/termgate/config.yaml"
	debKeys    = "/etc/termgate/authorized_keys"
	debState   = "/var/lib/termgate"
	debHostKey = debState + "/ssh_host_ed25519_key"
)

func TestDebianPackage(t *testing.T) {
	root := needPackageTest(t)
	sshBin := needOpenSSH(t)
	t.Parallel()

	deb, version := buildPackage(t, root)
	removeOnCleanup(t)
	installPackage(t, deb)
	checkInstalledFiles(t, root, version)
	lintUnit(t)
	lintPackage(t, deb)
	checkConfigDefaults(t)
	unit := readUnit(t, debUnit)
	svc := unit.user(t)

	// The admin's part: a key in authorized_keys; the listeners on ports
	// the OS picks and a JSON log (so that the test finds them), and only
	// this test's container as an instance.
	g := &gateway{
		t: t, prefix: "tgpkg-" + randomHex(t, 4) + "-", signers: map[string]gossh.Signer{},
		keyFiles: map[string]string{}, tokens: map[string]string{}, logs: termtest.NewStream(),
	}
	g.label = "tge2e.pkg=" + strings.TrimSuffix(strings.TrimPrefix(g.prefix, "tgpkg-"), "-")
	t.Cleanup(g.cleanup) // after the service stopped (cleanups run last first)
	g.writeState(t)
	keysFile, err := os.ReadFile(filepath.Join(g.stateDir, "authorized_keys"))
	if err != nil {
		t.Fatal(err)
	}
	writeKeepingMode(t, debKeys, keysFile)
	editConfig(t, map[string]string{
		`(?m)^ssh-addr: .*$`:           "ssh-addr: 127.0.0.1:0",
		`(?m)^http-addr: .*$`:          "http-addr: 127.0.0.1:0",
		`(?m)^#log-format: .*$`:        "log-format: json",
		`(?m)^#\s*instance-label: .*$`: "instance-label: " + g.label,
	})
	if err := g.startContainer("web-1"); err != nil {
		t.Fatal(err)
	}

	s := startService(t, unit, svc)
	g.logs, g.sshAddr = s.log, s.addrs.SSHAddr
	checkServiceProcess(t, s.cmd.Process.Pid, svc)
	hostKey, err := os.ReadFile(debHostKey)
	if err != nil {
		t.Fatalf("the service made no host key in its state directory: %v", err)
	}
	checkMode(t, debHostKey, 0o600, svc.name, "termgate")

	r := g.openssh(t, sshBin, t.TempDir(), "-tt", g.name("web-1")+"@127.0.0.1")
	r.typeIn("echo PKG$((6*7)) $(id -u)\n")
	r.expect(`PKG42 \d+`)
	r.typeIn("exit\n")
	select {
	case <-r.done:
	case <-time.After(waitFor):
		t.Fatalf("ssh did not end after exit:\n%s", r.out)
	}

	checkConfinement(t, unit, svc)
	s.stop(t, unit)
	// The first start made a browser token. Its output, the journal under
	// systemd, is no terminal: it names the token file, never the token.
	tokenFile := filepath.Join(debState, "api_token")
	if tok, err := os.ReadFile(tokenFile); err != nil || len(strings.Fields(string(tok))) == 0 {
		t.Errorf("the service made no browser token in %s: %v", tokenFile, err)
	} else if strings.Contains(s.log.String(), strings.Fields(string(tok))[0]) {
		t.Errorf("the service's log holds the browser token:\n%s", s.log)
	} else if !strings.Contains(s.log.String(), tokenFile) {
		t.Errorf("the service's log does not name %s, where the browser token is:\n%s", tokenFile, s.log)
	}

	// An upgrade keeps the edited conffile, the keys and the host key
	// (clients' known_hosts stay right). The newer package is the same
	// binary with a higher version: what dpkg does with the files does not
	// depend on the binary.
	before, _ := os.ReadFile(debConfig)
	newer, newVersion := buildUpgrade(t, root)
	installPackage(t, newer)
	if out, _ := exec.Command("dpkg-query", "-W", "-f=${Version}", "termgate").Output(); string(out) != newVersion {
		t.Errorf("after the upgrade dpkg knows version %q, want %q", out, newVersion)
	}
	if after, _ := os.ReadFile(debConfig); !bytes.Equal(after, before) {
		t.Errorf("the upgrade changed the edited %s:\n%s", debConfig, after)
	}
	if b, _ := os.ReadFile(debKeys); !bytes.Equal(b, keysFile) {
		t.Errorf("the upgrade changed %s", debKeys)
	}
	if b, _ := os.ReadFile(debHostKey); !bytes.Equal(b, hostKey) {
		t.Error("the upgrade changed the host key")
	}

	dpkg(t, "--purge", "termgate")
	for _, p := range []string{"/usr/bin/termgate", debUnit, "/etc/termgate", debState} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("after dpkg --purge, %s is still there", p)
		}
	}
}

// needPackageTest skips t unless it may install a package here, and fails
// it when it may but cannot. It returns the module's root.
func needPackageTest(t *testing.T) string {
	t.Helper()
	if os.Getenv("CI") != "true" && os.Getenv("TERMGATE_TEST_PACKAGE") != "1" {
		t.Skip("installs the Debian package on this machine: runs in CI (CI=true) or with TERMGATE_TEST_PACKAGE=1, as root")
	}
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (dpkg -i)")
	}
	for _, tool := range []string{"dpkg", "dpkg-query", "setpriv", "unshare", "findmnt", "make", "systemd-analyze", "gzip"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if dockerSkip != "" {
		missing = append(missing, dockerSkip)
	}
	if len(missing) > 0 {
		t.Fatalf("the package test needs %s", strings.Join(missing, ", "))
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "termgate").Output(); err == nil && strings.Contains(string(out), "installed") {
		t.Fatalf("termgate is installed on this machine (%s); the test would replace and purge it: run it on a throwaway machine", out)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var packageLine = regexp.MustCompile(`(?m)^package: (dist/termgate_([^_]+)_[a-z0-9]+\.deb) `)

// buildPackage runs `make package` and returns the .deb and its version.
func buildPackage(t *testing.T, root string) (deb, version string) {
	t.Helper()
	return packaging(t, root, nil, "make", "--no-print-directory", "package")
}

// buildUpgrade packs bin/termgate again (deploy/debian/package.sh, as
// make package does) as a version above buildPackage's; its cleanup
// removes the file.
func buildUpgrade(t *testing.T, root string) (deb, version string) {
	t.Helper()
	describe, err := exec.Command("git", "-C", root, "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		t.Fatalf("git describe: %v", err)
	}
	deb, version = packaging(t, root, []string{"VERSION=" + strings.TrimSpace(string(describe)) + "-upgrade"}, "bash", "deploy/debian/package.sh")
	t.Cleanup(func() { _ = os.Remove(deb) })
	return deb, version
}

// packaging runs a command that builds the package and returns the .deb
// it names and its version.
func packaging(t *testing.T, root string, env []string, argv ...string) (deb, version string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = root
	// Not the calling make's jobserver (make test runs go test).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "MFLAGS=") && !strings.HasPrefix(kv, "MAKELEVEL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	m := packageLine.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("%s named no dist/termgate_VERSION_ARCH.deb:\n%s", strings.Join(argv, " "), out)
	}
	t.Logf("%s: %s in %s", strings.Join(argv, " "), m[1], time.Since(start).Round(100*time.Millisecond))
	return filepath.Join(root, m[1]), m[2]
}

// removeOnCleanup purges the package at the test's end (whatever it got
// to) and removes the termgate user and group when this test made them
// (Debian's postrm leaves system users).
func removeOnCleanup(t *testing.T) {
	t.Helper()
	_, err := user.Lookup("termgate")
	userExisted := err == nil
	t.Cleanup(func() {
		if out, err := exec.Command("dpkg", "--purge", "termgate").CombinedOutput(); err != nil {
			t.Errorf("dpkg --purge termgate: %v\n%s", err, out)
		}
		if !userExisted {
			_ = exec.Command("userdel", "termgate").Run()
			_ = exec.Command("groupdel", "termgate").Run()
		}
	})
}

// installPackage runs dpkg -i.
func installPackage(t *testing.T, deb string) {
	t.Helper()
	dpkg(t, "-i", deb)
}

func dpkg(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("dpkg", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	// No stdin: a conffile question would fail the run, not hang it.
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// editConfig replaces one line of the installed config per pattern, as an
// admin would; a pattern that matches nothing fails t.
func editConfig(t *testing.T, edits map[string]string) {
	t.Helper()
	b, err := os.ReadFile(debConfig)
	if err != nil {
		t.Fatal(err)
	}
	for pattern, line := range edits {
		re := regexp.MustCompile(pattern)
		if !re.Match(b) {
			t.Fatalf("%s has no line %s to edit", debConfig, pattern)
		}
		b = re.ReplaceAll(b, []byte(line))
	}
	writeKeepingMode(t, debConfig, b)
}

// writeKeepingMode rewrites an existing file in place: its owner and mode
// stay the package's.
func writeKeepingMode(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkConfigDefaults starts the installed binary on the installed config
// with every `#key: value` default uncommented: the file names only keys
// and values the binary takes.
func checkConfigDefaults(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(debConfig)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^#([a-z][a-z0-9-]*: .*)$`)
	n := len(re.FindAll(b, -1))
	if n < 10 {
		t.Fatalf("%s shows %d defaults as #key: value lines, want the common ones", debConfig, n)
	}
	// Every example is uncommented but the TLS pair, which needs the
	// admin's certificate and turns the listener into HTTPS; the user CA
	// example names a file a fresh install has not: a stand-in takes its
	// place.
	uncommented := re.ReplaceAllFunc(b, func(line []byte) []byte {
		if bytes.HasPrefix(line, []byte("#tls-")) {
			return line
		}
		return line[1:]
	})
	ca := filepath.Join(t.TempDir(), "user_ca.pub")
	_, caKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caPub, err := gossh.NewPublicKey(caKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, ca, gossh.MarshalAuthorizedKey(caPub))
	uncommented = bytes.ReplaceAll(uncommented, []byte("/etc/termgate/user_ca.pub"), []byte(ca))
	all := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, all, uncommented)
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	// Command-line flags win over the file: free ports, a scratch state
	// (not the service's, which root must not write), and a label no
	// container carries.
	gw, err := gatewayproc.Start(context.Background(), gatewayproc.Config{
		Bin: "/usr/bin/termgate", StateDir: state,
		Args: []string{"--config", all, "--instance-label", "tgpkg.none=1",
			"--host-key", filepath.Join(state, "ssh_host_ed25519_key"), "--token-file", filepath.Join(state, "api_token")},
	})
	if err != nil {
		t.Fatalf("the installed binary refused %s with its %d defaults uncommented: %v", debConfig, n, err)
	}
	if _, err := gw.Stop(stopWithin); err != nil {
		t.Error(err)
	}
}

// lintUnit runs systemd-analyze on the installed unit: verify (no
// warning at all) and the offline security score.
func lintUnit(t *testing.T) {
	t.Helper()
	out, err := exec.Command("systemd-analyze", "verify", "--man=no", debUnit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", debUnit, err, out)
	}
	out, _ = exec.Command("systemd-analyze", "security", "--offline=true", "--no-pager", debUnit).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for termgate.service: ([0-9.]+) (\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security --offline=true gave no exposure level:\n%s", out)
	}
	t.Logf("systemd-analyze security: exposure %s %s", m[1], m[2])
	var level float64
	fmt.Sscan(string(m[1]), &level)
	if level > 2.5 {
		t.Errorf("the unit's exposure level is %.1f, want at most 2.5:\n%s", level, out)
	}
}

// lintPackage runs lintian on the package where it is installed (CI does
// not install it: it takes 20 s of CPU). The maintainer address is a
// placeholder until the project has one.
func lintPackage(t *testing.T, deb string) {
	t.Helper()
	if _, err := exec.LookPath("lintian"); err != nil {
		t.Log("no lintian here: the package is not linted (apt install lintian)")
		return
	}
	out, err := exec.Command("lintian", "--tag-display-limit", "0",
		"--suppress-tags", "bogus-mail-host,bogus-mail-host-in-debian-changelog", deb).CombinedOutput()
	var tags []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "E: ") || strings.HasPrefix(line, "W: ") {
			tags = append(tags, line)
		}
	}
	if err != nil || len(tags) > 0 {
		t.Errorf("lintian %s: %v\n%s", filepath.Base(deb), err, out)
	}
}

// service is the gateway started from the installed unit.
type service struct {
	cmd    *exec.Cmd
	log    *termtest.Stream
	addrs  gatewayproc.Addrs
	exited chan struct{}
	err    error // cmd.Wait's; read after exited
}

func startService(t *testing.T, unit unitSettings, svc serviceUser) *service {
	t.Helper()
	s := &service{log: termtest.NewStream(), exited: make(chan struct{})}
	s.cmd = svc.command(t, unit, unit.execStart(t)...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.stop(t, unit) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	if s.addrs, err = gatewayproc.WaitListening(ctx, s.log, s.exited); err != nil {
		t.Fatalf("the service, started as %s: %v\n%s", strings.Join(s.cmd.Args, " "), err, s.log)
	}
	return s
}

// stop sends SIGTERM, as systemctl stop does, and waits TimeoutStopSec=.
func (s *service) stop(t *testing.T, unit unitSettings) {
	t.Helper()
	select {
	case <-s.exited:
		return
	default:
	}
	within, err := time.ParseDuration(unit.one(t, "TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if s.err != nil {
			t.Errorf("after SIGTERM the service exited with %v\n%s", s.err, s.log)
		}
	case <-time.After(within):
		_ = s.cmd.Process.Kill()
		<-s.exited
		t.Errorf("the service did not exit within TimeoutStopSec=%s of SIGTERM", within)
	}
}
