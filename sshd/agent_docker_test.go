package sshd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/backend/docker"
	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// Agent forwarding against the Docker backend with real OpenSSH clients
// and real ssh-agents: the agent follows the person across a reattach
// from another agent, an observer's agent is never used, a socket with no
// agent behind it answers at once, a signature is an audit record, a
// command gets its caller's agent only, and no-agent-forwarding refuses.
// busybox has no ssh-add: agentc (testdata/agentc, x/crypto's agent
// client) is copied in and asks instead.

// agentTest is the fixture: a gateway over Docker with an audit trail, a
// container with agentc, and OpenSSH's files.
type agentTest struct {
	*fixture
	audit *termtest.SyncBuffer
	inst  string
	login string // LOGIN@ in front of the instance, "" for none
	port  string
	home  string
	files map[string]string // key name: its private key file
}

func newAgentTest(t *testing.T, durable bool) *agentTest {
	t.Helper()
	for _, bin := range []string{"ssh", "ssh-agent", "ssh-add"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
				t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but no %s: %v", bin, err)
			}
			t.Skipf("no OpenSSH %s installed", bin)
		}
	}
	bin := needDockerFiles(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	label := "termgate.sshdtest=" + hex.EncodeToString(b)
	d := exechost.Durable{Holder: bin}
	if durable { // the held shell gets SSH_AUTH_SOCK through its holder
		d.Enabled, d.HolderSecret = true, []byte("termgate agent test secret 0123456789")
	}
	be, err := docker.New(docker.Config{Label: label, Durable: d, GatewayID: "tgagent" + hex.EncodeToString(b[:2])})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	trail := &termtest.SyncBuffer{}
	f := newFixtureReg(t, func(c *Config) {
		c.Remote = be
		c.Audit = audit.New(trail)
	}, func(rc *sessions.Config) { rc.Backend = be })
	at := &agentTest{fixture: f, audit: trail, home: t.TempDir(), files: map[string]string{}}
	_, at.port, _ = net.SplitHostPort(f.addr)
	for name, priv := range f.privs {
		at.files[name] = writePrivateKey(t, filepath.Join(at.home, "id_"+name), priv)
	}
	at.inst = "webagent-" + hex.EncodeToString(b)
	out, err := exec.Command("docker", "run", "-d", "--init", "--network", "none", "--label", label, "--name", at.inst, dockerTestImage).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", at.inst).Run() })
	agentc := filepath.Join(t.TempDir(), "agentc")
	build := exec.Command("go", "build", "-trimpath", "-o", agentc, "./testdata/agentc")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build agentc: %v: %s", err, out)
	}
	if out, err := exec.Command("docker", "cp", agentc, at.inst+":/bin/agentc").CombinedOutput(); err != nil {
		t.Fatalf("docker cp agentc: %v: %s", err, out)
	}
	return at
}

func writePrivateKey(t *testing.T, path string, priv any) string {
	t.Helper()
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startAgent runs an ssh-agent holding one new key and returns its socket
// and the key's fingerprint.
func (at *agentTest) startAgent(t *testing.T, name string) (sock, fp string) {
	t.Helper()
	signer, priv := newSigner(t)
	dir, err := os.MkdirTemp("", "tgagent-") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock = filepath.Join(dir, "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	keyFile := writePrivateKey(t, filepath.Join(dir, name), priv)
	deadline := time.Now().Add(waitFor)
	for {
		add := exec.Command("ssh-add", keyFile)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		out, err := add.CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) { // the agent's socket is not there yet, or never
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return sock, gossh.FingerprintSHA256(signer.PublicKey())
}

func (at *agentTest) sshArgs(key string, args ...string) []string {
	return append([]string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-e", "none",
		"-i", at.files[key], "-p", at.port}, args...)
}

// target is the ssh destination: [LOGIN@]INSTANCE@127.0.0.1.
func (at *agentTest) target() string {
	if at.login != "" {
		return at.login + "@" + at.inst + "@127.0.0.1"
	}
	return at.inst + "@127.0.0.1"
}

// run runs a command with ssh -A and the agent at sock; its stdout and
// stderr together, and its status.
func (at *agentTest) run(t *testing.T, key, sock, line string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ssh", at.sshArgs(key, "-A", at.target(), line)...)
	cmd.Env = append(os.Environ(), "HOME="+at.home, "SSH_AUTH_SOCK="+sock)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("ssh %q did not finish: %s", line, out)
	}
	code := 0
	if ee := (*exec.ExitError)(nil); err != nil {
		var ok bool
		if ee, ok = err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

// osshTerm is an OpenSSH client attached with -tt and a pipe as input,
// driven line by line.
type osshTerm struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *stream
	seen int
	done chan error
}

func (at *agentTest) attach(t *testing.T, key, sock string) *osshTerm {
	t.Helper()
	cmd := exec.Command("ssh", at.sshArgs(key, "-tt", "-A", at.target())...)
	cmd.Env = append(os.Environ(), "HOME="+at.home, "SSH_AUTH_SOCK="+sock)
	o := &osshTerm{t: t, cmd: cmd, out: newStream(), done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = o.out, o.out
	var err error
	if o.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { o.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-o.done
	})
	return o
}

func (o *osshTerm) send(line string) {
	o.t.Helper()
	if _, err := io.WriteString(o.in, line+"\n"); err != nil {
		o.t.Fatalf("send %q: %v", line, err)
	}
}

func (o *osshTerm) expect(re string) []string {
	o.t.Helper()
	m, at := o.out.waitFor(regexp.MustCompile(re), o.seen)
	if m == nil {
		o.t.Fatalf("no %q in the output:\n%q", re, o.out.String())
	}
	o.seen = at
	return m
}

// sync skips what came before (a reattach's replay): it waits for the
// answer to a sum, which only the shell writes.
func (o *osshTerm) sync() {
	o.t.Helper()
	o.send(`echo "sync=$((20+22))."`)
	o.expect(`sync=42\.`)
}

// agentc runs agentc in the shell once its socket is there (the socket's
// helper starts beside the attach) and returns its line.
func (o *osshTerm) agentc(what string) string {
	o.t.Helper()
	o.send(`for i in $(seq 100); do [ -S "$SSH_AUTH_SOCK" ] && break; sleep 0.1; done; agentc ` + what + ` | sed 's/^/out=/'`)
	return o.expect(`out=(agent-[a-z]+: [^\r\n]*)\.`)[1]
}

// detach types ~. and waits for the client to end.
func (o *osshTerm) detach() {
	o.t.Helper()
	o.send("")
	o.send("~.")
	select {
	case <-o.done:
		o.done <- nil // for the cleanup
	case <-time.After(waitFor):
		o.t.Fatalf("ssh did not detach; output %q", o.out.String())
	}
}

// TestAgentForwardingDocker: the contract's "Agent forwarding", end to
// end, for plain and durable (held) sessions.
func TestAgentForwardingDocker(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "durable"}[durable], func(t *testing.T) { testAgentForwarding(t, durable) })
	}
}

func testAgentForwarding(t *testing.T, durable bool) {
	at := newAgentTest(t, durable)
	sock1, fp1 := at.startAgent(t, "one")
	sock2, fp2 := at.startAgent(t, "two")
	sock3, fp3 := at.startAgent(t, "three") // the observer's

	// Attach with -A from agent 1: SSH_AUTH_SOCK is in the shell from its
	// start, in a private directory, and lists key 1.
	a1 := at.attach(t, "admin", sock1)
	a1.send(`echo "pid=$$."; echo "sock=$SSH_AUTH_SOCK."`)
	pid := a1.expect(`pid=(\d+)\.`)[1]
	sockIn := a1.expect(`sock=(/tmp/\.termgate-agent-[0-9a-f]+/agent\.sock)\.`)[1]
	if got := a1.agentc("list"); got != "agent-keys: "+fp1 {
		t.Fatalf("agent 1 attached: %q, want key %s", got, fp1)
	}
	a1.send(`stat -c "mode=%a:%U." ` + filepath.Dir(sockIn) + " " + sockIn)
	if m := a1.expect(`mode=(\d+):(\w+)\.`); m[1] != "700" || m[2] != "root" {
		t.Fatalf("socket directory: %v, want 700 root", m)
	}
	if m := a1.expect(`mode=(\d+):(\w+)\.`); m[1] != "600" || m[2] != "root" {
		t.Fatalf("socket: %v, want 600 root", m)
	}
	// A signature is an audit record naming the key, the session and the
	// requesting process.
	if got := a1.agentc("sign"); got != "agent-signed: "+fp1 {
		t.Fatalf("sign: %q", got)
	}
	eventuallyOr(t, "the signature's audit record", func() bool {
		for _, l := range strings.Split(at.audit.String(), "\n") {
			if strings.Contains(l, `"event":"agent_sign"`) && strings.Contains(l, `"key_fingerprint":"`+fp1+`"`) &&
				strings.Contains(l, `"result":"ok"`) && strings.Contains(l, `"process":"agentc"`) && strings.Contains(l, `"pid":`) &&
				strings.Contains(l, `"instance":"`+at.inst+`"`) && strings.Contains(l, `"session":"`) && strings.Contains(l, `"who":"admin"`) {
				return true
			}
		}
		return false
	}, func() string { return at.audit.String() })
	a1.detach()

	// Nobody read-write is attached: an observer with -A (a read-only
	// key) attaches; the socket answers "no agent" at once, and never with
	// the observer's keys.
	at.attach(t, "watcher", sock3)
	eventually(t, "the observer to attach", func() bool { return clientsOf(at.reg, at.inst) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "docker", "exec", "-e", "SSH_AUTH_SOCK="+sockIn, at.inst, "agentc", "list").CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("agentc with no agent attached hangs: %s", out)
	}
	if !strings.Contains(string(out), "agent-error: no agent") || strings.Contains(string(out), fp3) {
		t.Fatalf("no read-write client attached: %q, want agent-error: no agent", out)
	}

	// Reattach with -A from agent 2: the same shell now lists key 2.
	a2 := at.attach(t, "admin", sock2)
	a2.sync()
	a2.send(`echo "pid=$$."`)
	if got := a2.expect(`pid=(\d+)\.`)[1]; got != pid {
		t.Fatalf("reattach: pid %s, want the same shell %s", got, pid)
	}
	if got := a2.agentc("list"); got != "agent-keys: "+fp2 {
		t.Fatalf("agent 2 attached: %q, want key %s (the observer's is %s, agent 1 %s); output %q", got, fp2, fp3, fp1, a2.out.String())
	}

	// A one-off command gets its caller's agent only (agent 1), on a
	// socket of its own, while agent 2 answers for the session.
	out2, code := at.run(t, "admin", sock1, `echo "sock=$SSH_AUTH_SOCK."; agentc list`)
	if code != 0 || !strings.Contains(out2, "agent-keys: "+fp1+".") || !regexp.MustCompile(`sock=/tmp/\.termgate-agent-cmd-[0-9a-f]+/agent\.sock\.`).MatchString(out2) {
		t.Fatalf("command with -A: status %d, output %q; want key %s on a socket of its own", code, out2, fp1)
	}
	if got := a2.agentc("list"); got != "agent-keys: "+fp2 {
		t.Fatalf("the session's agent after the command: %q, want key %s", got, fp2)
	}

	// A reset moves a2 to a fresh shell, which has an agent socket of its
	// own (the reset keeps it), answered by a2's agent.
	if out, code := at.run(t, "admin", "", "reset"); code != 0 || !strings.Contains(out, "new session") {
		t.Fatalf("reset: status %d, output %q", code, out)
	}
	a2.expect(`session reset`)
	a2.sync()
	a2.send(`echo "sock=$SSH_AUTH_SOCK."`)
	if got := a2.expect(`sock=(/tmp/\.termgate-agent-[0-9a-f]+/agent\.sock)\.`)[1]; got == sockIn {
		t.Fatalf("the fresh shell's socket is the old one's: %s", got)
	}
	if got := a2.agentc("list"); got != "agent-keys: "+fp2 {
		t.Fatalf("after the reset: %q, want key %s", got, fp2)
	}

	// no-agent-forwarding refuses, with the reason.
	at.setKeys(t, map[string]string{"admin": "", "watcher": `read-only,instances="web*" `, "stranger": "no-agent-forwarding "})
	out3, code := at.run(t, "stranger", sock1, `echo "sock=$SSH_AUTH_SOCK."`)
	if code != 0 || !strings.Contains(out3, "agent forwarding is not allowed for this key") || strings.Contains(out3, ".termgate-agent") {
		t.Fatalf("no-agent-forwarding: status %d, output %q; want the refusal and no socket", code, out3)
	}
	if n := strings.Count(at.audit.String(), `"event":"agent_sign"`); n != 1 {
		t.Fatalf("%d signature records, want 1:\n%s", n, at.audit.String())
	}
}

// eventuallyOr is eventually, saying what there is when it times out.
func eventuallyOr(t *testing.T, what string, cond func() bool, have func() string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; have:\n%s", what, have())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
