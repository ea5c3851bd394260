package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// The rsync rows (issue 37): `rsync -a` of rsyncMiB up into the first
// benchmark container through the gateway (the image has no rsync: the
// holder's serves it) and back down, against the same rsync over a plain
// OpenSSH sshd on loopback into this machine's disk (no ForceCommand: the
// least an rsync over SSH costs here), round by round, in seconds (the
// medians; ratio = gateway / sshd). They run with the OpenSSH anchor
// (-openssh, which needs openssh-server) and need the rsync client.

// pathRsyncSSHD is the rsync rows' reference.
const pathRsyncSSHD = "rsync over openssh sshd"

const (
	rsyncMiB       = 100
	rsyncMaxRounds = 3
	rsyncTimeout   = 2 * time.Minute // one transfer
)

var rsyncMetrics = []string{"rsync_up", "rsync_down"}

// rsyncBench measures the rsync rows; a row that cannot run fails with why.
func rsyncBench(ctx context.Context, e *env, cfg *config, rep *Report, logf func(string, ...any)) {
	fail := func(err error) {
		for _, m := range rsyncMetrics {
			rep.fail(m, pathSSH, err)
			rep.fail(m, pathRsyncSSHD, err)
		}
	}
	if _, err := exec.LookPath("rsync"); err != nil {
		fail(errors.New("no rsync client: apt-get install rsync"))
		return
	}
	r, err := setupRsync(ctx, e)
	if r != nil {
		defer r.stop()
	}
	if err != nil {
		fail(err)
		return
	}
	rounds := min(cfg.runs, rsyncMaxRounds)
	samples := map[string][]float64{}
	for i := range rounds {
		if ctx.Err() != nil {
			break
		}
		times, err := r.round(ctx, e, i)
		if err != nil {
			fail(fmt.Errorf("round %d: %w", i+1, cause(ctx, err)))
			return
		}
		for k, v := range times {
			samples[k] = append(samples[k], v)
		}
		logf("  round %d: up %.2f s (sshd %.2f s), down %.2f s (sshd %.2f s)", i+1,
			times["rsync_up "+pathSSH], times["rsync_up "+pathRsyncSSHD], times["rsync_down "+pathSSH], times["rsync_down "+pathRsyncSSHD])
	}
	note := fmt.Sprintf("rsync -a of %d MiB of random bytes", rsyncMiB)
	for _, m := range rsyncMetrics {
		for _, p := range []string{pathSSH, pathRsyncSSHD} {
			s := samples[m+" "+p]
			rep.addSamples(ctx, m, p, median(s), s, rounds, note)
		}
	}
}

// rsyncRun is the rows' setup: a client key both servers accept, the
// plain sshd, the data.
type rsyncRun struct {
	dir  string // under the state directory
	key  string // the client's private key file
	data string
	sshd *exec.Cmd
	port string // the plain sshd's
	user string
}

// setupRsync writes a client key into the gateway's authorized_keys
// (reloaded on SIGHUP) and the plain sshd's, starts that sshd and writes
// the data. The returned run is stopped by the caller even on error.
func setupRsync(ctx context.Context, e *env) (*rsyncRun, error) {
	if e.gw == nil {
		return nil, errors.New("the gateway is not running")
	}
	bin, err := findSSHD()
	if err != nil {
		return nil, err
	}
	u, err := user.Current()
	if err != nil {
		return nil, err
	}
	r := &rsyncRun{dir: filepath.Join(e.dir, "rsync"), user: u.Username}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, err
	}
	pub, err := writeKey(filepath.Join(r.dir, "client_key"))
	if err != nil {
		return nil, err
	}
	r.key = filepath.Join(r.dir, "client_key")
	if _, err := writeKey(filepath.Join(r.dir, "host_key")); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(r.dir, "authorized_keys"), pub, 0o600); err != nil {
		return nil, err
	}
	ak, err := os.OpenFile(filepath.Join(e.dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = ak.Write(pub)
	if cerr := ak.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(e.gw.PID(), syscall.SIGHUP); err != nil {
		return nil, fmt.Errorf("reload the gateway's authorized_keys: %w", err)
	}
	addr, err := sshdAddr()
	if err != nil {
		return nil, err
	}
	_, r.port, _ = net.SplitHostPort(addr)
	conf := strings.Join([]string{
		"ListenAddress " + addr,
		"HostKey " + filepath.Join(r.dir, "host_key"),
		"PidFile " + filepath.Join(r.dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(r.dir, "authorized_keys"),
		"AllowUsers " + r.user,
		"StrictModes no", "UsePAM no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password", "PrintMotd no", "UseDNS no", "LogLevel ERROR",
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(r.dir, "sshd_config"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	_ = os.MkdirAll("/run/sshd", 0o755)
	r.sshd = exec.Command(bin, "-D", "-e", "-f", filepath.Join(r.dir, "sshd_config"))
	logPath := filepath.Join(r.dir, "sshd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	r.sshd.Stdout, r.sshd.Stderr = logFile, logFile
	r.sshd.SysProcAttr = childAttr()
	err = r.sshd.Start()
	logFile.Close() // sshd has its own copy
	if err != nil {
		r.sshd = nil
		return r, fmt.Errorf("start %s: %w", bin, err)
	}
	data := make([]byte, rsyncMiB<<20)
	_, _ = rand.Read(data)
	r.data = filepath.Join(r.dir, "data")
	if err := os.WriteFile(r.data, data, 0o644); err != nil {
		return r, err
	}
	// Both answer once the gateway reloaded and sshd listens.
	deadline := time.Now().Add(15 * time.Second)
	for _, target := range [][]string{r.gatewayArgs(e, "termgate@127.0.0.1", "help"), r.sshdArgs(r.user+"@127.0.0.1", "true")} {
		for {
			out, err := exec.CommandContext(ctx, "ssh", target...).CombinedOutput()
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				sshdLog, _ := os.ReadFile(logPath)
				return r, fmt.Errorf("ssh %s: %v: %s %s", target[len(target)-2], err, bytes.TrimSpace(out), bytes.TrimSpace(sshdLog))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return r, nil
}

// writeKey writes a new ed25519 private key to path and returns its
// authorized_keys line.
func writeKey(path string) ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "tgbench rsync")
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	return ssh.MarshalAuthorizedKey(signer.PublicKey()), os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}

func (r *rsyncRun) sshOpts() []string {
	return []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", r.key}
}

func (r *rsyncRun) gatewayArgs(e *env, rest ...string) []string {
	_, port, _ := net.SplitHostPort(e.sshAddr)
	return append(append(r.sshOpts(), "-p", port), rest...)
}

func (r *rsyncRun) sshdArgs(rest ...string) []string {
	return append(append(r.sshOpts(), "-p", r.port), rest...)
}

// rsync runs `rsync -a -e "ssh ARGS" SRC DST` and returns its seconds.
func (r *rsyncRun) rsync(ctx context.Context, sshArgs []string, src, dst string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, rsyncTimeout)
	defer cancel()
	rsh := "ssh " + strings.Join(sshArgs, " ")
	start := time.Now()
	out, err := exec.CommandContext(ctx, "rsync", "-a", "-e", rsh, src, dst).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("rsync %s %s: %v: %s", src, dst, err, bytes.TrimSpace(out))
	}
	return time.Since(start).Seconds(), nil
}

// round moves the data up and down both ways, the gateway's first in odd
// rounds, and checks what came down. Fresh names each round: rsync would
// skip a file already there.
func (r *rsyncRun) round(ctx context.Context, e *env, i int) (map[string]float64, error) {
	c := e.instance(0)
	name := fmt.Sprintf("rsync-%d", i)
	remote := "/tmp/tgbench-" + name
	type step struct {
		key      string
		ssh      []string
		src, dst string
	}
	gw := []step{
		{"rsync_up " + pathSSH, r.gatewayArgs(e), r.data, c + "@127.0.0.1:" + remote},
		{"rsync_down " + pathSSH, r.gatewayArgs(e), c + "@127.0.0.1:" + remote, filepath.Join(r.dir, name+"-gw")},
	}
	plain := []step{
		{"rsync_up " + pathRsyncSSHD, r.sshdArgs(), r.data, r.user + "@127.0.0.1:" + filepath.Join(r.dir, name+"-up")},
		{"rsync_down " + pathRsyncSSHD, r.sshdArgs(), r.user + "@127.0.0.1:" + filepath.Join(r.dir, name+"-up"), filepath.Join(r.dir, name+"-plain")},
	}
	steps := append(gw, plain...)
	if i%2 == 1 {
		steps = append(plain, gw...)
	}
	times := map[string]float64{}
	for _, s := range steps {
		d, err := r.rsync(ctx, s.ssh, s.src, s.dst)
		if err != nil {
			return nil, err
		}
		times[s.key] = d
	}
	want, err := os.ReadFile(r.data)
	if err != nil {
		return nil, err
	}
	for _, got := range []string{name + "-gw", name + "-plain"} {
		b, err := os.ReadFile(filepath.Join(r.dir, got))
		if err != nil || !bytes.Equal(b, want) {
			return nil, fmt.Errorf("%s differs from what was sent (%v)", got, err)
		}
		_ = os.Remove(filepath.Join(r.dir, got))
	}
	_ = os.Remove(filepath.Join(r.dir, name+"-up"))
	if out, err := exec.CommandContext(ctx, "docker", "exec", c, "rm", "-f", remote).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("docker exec rm: %v: %s", err, out)
	}
	return times, nil
}

// stop ends the plain sshd.
func (r *rsyncRun) stop() {
	if r.sshd == nil {
		return
	}
	_ = r.sshd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = r.sshd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = r.sshd.Process.Kill()
		<-done
	}
	r.sshd = nil
}
