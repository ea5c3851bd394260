package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/gatewayproc"
)

// readmeRun is the set-up the README's commands run in, as a newcomer's
// would: a working directory whose .termgate is the gateway's state
// directory (first start: the token file and the host key generated,
// authorized_keys seeded from ~/.ssh/*.pub), a container "web1", and
// OpenSSH's ssh, scp and sftp.
type readmeRun struct {
	t        *testing.T
	work     string // the commands' working directory
	home     string // HOME, with ~/.ssh/id_ed25519
	wrappers string // ssh, scp and sftp with -F the config below
	name     string // the container the README calls web1
	proc     *gatewayproc.Gateway
	sshPort  string
	token    string        // $TOKEN, once the README's TOKEN= line ran
	held     *gossh.Client // holdSession's terminal, closed before log
}

// TestREADMECommandsRun runs the README commands readmeRules gives to it,
// in the README's order, as written: only the port numbers, the host
// name and the instance's name are replaced by the test's, and templates
// (INSTANCE, CMD…, 8h|off) by values. Each must succeed and do what the
// README says it does.
func TestREADMECommandsRun(t *testing.T) {
	needHolder(t) // scp, sftp, the files route and -L run through it
	needOpenSSH(t)
	r := startReadmeRun(t)
	for _, c := range readmeCommands(t) {
		if i := ruleFor(c.text); i < 0 || readmeRules[i].test != runsHere {
			continue
		}
		for _, cmd := range expandTemplates(c.text) {
			t.Run(fmt.Sprintf("line%d/%s", c.line, cmd), func(t *testing.T) { r.run(t, cmd) })
		}
	}
}

func startReadmeRun(t *testing.T) *readmeRun {
	t.Helper()
	id := randomHex(t, 4)
	r := &readmeRun{t: t, work: t.TempDir(), home: t.TempDir(), wrappers: t.TempDir(), name: "tge2e-" + id + "-web1"}
	label := "tge2e.readme=" + id
	if err := os.MkdirAll(filepath.Join(r.home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "readme@test",
		"-f", filepath.Join(r.home, ".ssh", "id_ed25519")).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := docker(ctx, "run", "-d", "--init", "--network", "none", "--label", "tge2e", "--label", label,
		"--name", r.name, testImage); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_, _ = docker(ctx, "rm", "-f", r.name)
	})
	proc, err := gatewayproc.Start(ctx, gatewayproc.Config{
		Bin:      gatewayBin,
		StateDir: filepath.Join(r.work, ".termgate"),
		Env:      []string{"HOME=" + r.home},
		Args:     []string{"--backend", "docker", "--instance-label", label},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.proc = proc
	t.Cleanup(func() {
		if _, err := proc.Stop(stopWithin); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", proc.Log)
		}
	})
	_, r.sshPort, _ = net.SplitHostPort(proc.SSHAddr)
	hostKey, err := proc.HostKey()
	if err != nil {
		t.Fatal(err)
	}
	known := filepath.Join(r.home, "known_hosts")
	writeFile(t, known, append([]byte("termgate-readme "), gossh.MarshalAuthorizedKey(hostKey)...))
	cfg := filepath.Join(r.home, "ssh_config")
	writeFile(t, cfg, fmt.Appendf(nil, "Host *\n  HostKeyAlias termgate-readme\n  UserKnownHostsFile %s\n"+
		"  StrictHostKeyChecking yes\n  BatchMode yes\n  IdentitiesOnly yes\n  IdentityFile %s\n  LogLevel ERROR\n",
		known, filepath.Join(r.home, ".ssh", "id_ed25519")))
	for _, prog := range []string{"ssh", "scp", "sftp"} {
		path, err := exec.LookPath(prog)
		if err != nil {
			t.Fatalf("%s: %v (install openssh-client)", prog, err)
		}
		script := fmt.Sprintf("#!/bin/sh\nexec %s -F %s \"$@\"\n", path, cfg)
		if err := os.WriteFile(filepath.Join(r.wrappers, prog), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.holdSession(t)
	return r
}

// holdSession attaches a client to web1 for the whole run, so list, who
// and instances have a session and a client to show.
func (r *readmeRun) holdSession(t *testing.T) {
	t.Helper()
	r.held = r.attach(t)
	t.Cleanup(func() { _ = r.held.Close() })
	eventually(t, "the held session is listed", func() bool {
		out, _, err := r.exec("ssh -p 2222 localhost list", nil)
		return err == nil && strings.Contains(out, r.name)
	})
}

// attach opens a terminal on web1 with the README user's key.
func (r *readmeRun) attach(t *testing.T) *gossh.Client {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(r.home, ".ssh", "id_ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	hostKey, err := r.proc.HostKey()
	if err != nil {
		t.Fatal(err)
	}
	client, err := gossh.Dial("tcp", r.proc.SSHAddr, &gossh.ClientConfig{User: r.name,
		Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)}, HostKeyCallback: gossh.FixedHostKey(hostKey), Timeout: waitFor})
	if err != nil {
		t.Fatalf("ssh %s: %v (was authorized_keys seeded from ~/.ssh?)", r.name, err)
	}
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.RequestPty("xterm", 24, 80, nil); err != nil {
		t.Fatal(err)
	}
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	return client
}

// expandTemplates gives a table row's template its concrete forms.
func expandTemplates(cmd string) []string {
	switch {
	case strings.Contains(cmd, "[COLSxROWS|auto]"):
		base := strings.TrimSpace(strings.Replace(cmd, "[COLSxROWS|auto]", "", 1))
		return []string{base, base + " 120x40", base + " auto"}
	case strings.Contains(cmd, "8h|off"):
		return []string{strings.Replace(cmd, "8h|off", "8h", 1), strings.Replace(cmd, "8h|off", "off", 1)}
	case strings.Contains(cmd, "CMD…"):
		return []string{strings.Replace(cmd, "CMD…", "echo readme-ok", 1)}
	}
	return []string{cmd}
}

var (
	readmeHost  = regexp.MustCompile(`\b(HOST|localhost)\b`)
	readmeInst  = regexp.MustCompile(`\b(web1|INSTANCE)\b`)
	readmeHTTP  = regexp.MustCompile(`\b(HOST|localhost):8080\b`)
	readmeLocal = regexp.MustCompile(`-L 18080:`)
)

// concrete is cmd with the test's ports, host and instance name.
func (r *readmeRun) concrete(cmd string, localPort string) string {
	cmd = strings.NewReplacer("-p 2222", "-p "+r.sshPort, "-P 2222", "-P "+r.sshPort).Replace(cmd)
	cmd = readmeLocal.ReplaceAllString(cmd, "-L "+localPort+":")
	cmd = readmeHTTP.ReplaceAllString(cmd, r.proc.HTTPAddr)
	cmd = readmeHost.ReplaceAllString(cmd, "127.0.0.1")
	return readmeInst.ReplaceAllString(cmd, r.name)
}

// exec runs one README command (as written; concrete applies the test's
// addresses) in the working directory.
func (r *readmeRun) exec(cmd string, stdin []byte) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", r.concrete(cmd, ""))
	c.Dir = r.work
	c.Env = append(os.Environ(), "PATH="+r.wrappers+":"+os.Getenv("PATH"), "HOME="+r.home, "TOKEN="+r.token)
	c.Stdin = bytes.NewReader(stdin)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err = c.Run()
	return o.String(), e.String(), err
}

// run runs cmd and checks it did what the README says.
func (r *readmeRun) run(t *testing.T, cmd string) {
	switch {
	case strings.HasPrefix(cmd, "TOKEN="):
		out, _, err := r.exec(cmd+`; printf %s "$TOKEN"`, nil)
		if err != nil || out == "" {
			t.Fatalf("%s: %v, token %q", cmd, err, out)
		}
		r.token = out
		if code, _ := r.get(t, "/api/whoami"); code != http.StatusOK {
			t.Fatalf("the token the README reads from .termgate/api_token gets %d on /api/whoami", code)
		}
		return
	case strings.Contains(cmd, " -N -L "):
		r.runForward(t, cmd)
		return
	}
	var stdin []byte
	switch {
	case strings.HasPrefix(cmd, "sftp "):
		stdin = []byte("pwd\n")
	case strings.HasPrefix(cmd, "scp ") && strings.Contains(cmd, "app.log web1@"):
		writeFile(t, filepath.Join(r.work, "app.log"), []byte(randomText(t)))
	case strings.HasPrefix(cmd, "scp ") && strings.Contains(cmd, ":/var/log/app.log"):
		dockerExec(t, r.name, "mkdir -p /var/log && echo from-web1-"+randomHex(t, 8)+" > /var/log/app.log")
	case strings.Contains(cmd, " -T app.log "):
		writeFile(t, filepath.Join(r.work, "app.log"), []byte(randomText(t)))
	case strings.Contains(cmd, " -o app.log "):
		_ = os.Remove(filepath.Join(r.work, "app.log"))
	case strings.Contains(cmd, " log "):
		// log shows what the shell printed since this key's last
		// client detached: detach the held one.
		_ = r.held.Close()
		eventually(t, "the held terminal detached", func() bool {
			out, _, err := r.exec("ssh -p 2222 HOST who INSTANCE", nil)
			return err == nil && !strings.Contains(out, "readme@test")
		})
	}
	out, errOut, err := r.exec(cmd, stdin)
	if err != nil {
		t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", r.concrete(cmd, ""), err, out, errOut)
	}
	want := func(re string) {
		t.Helper()
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("%s printed %q; want it to match %s", cmd, out, re)
		}
	}
	local := func() string {
		b, err := os.ReadFile(filepath.Join(r.work, "app.log"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	switch {
	case strings.HasSuffix(cmd, " list"), strings.HasSuffix(cmd, " instances"):
		want(regexp.QuoteMeta(r.name))
	case strings.HasSuffix(cmd, " whoami"):
		want(`readme@test`)
	case strings.HasSuffix(cmd, " help"):
		want(`reset`)
	case strings.Contains(cmd, " reset"):
		want(`^reset ` + regexp.QuoteMeta(r.name) + `: new session [0-9a-f]+`)
	case strings.Contains(cmd, " who "):
		want(`readme@test`)
	case strings.Contains(cmd, " log "):
		if !strings.Contains(errOut, "since you left") {
			t.Errorf("%s said on stderr %q; want the summary of what it printed since you left", cmd, errOut)
		}
	case strings.HasSuffix(cmd, " 120x40"):
		want(`120x40`)
	case strings.HasSuffix(cmd, " uptime"):
		want(`load average`)
	case strings.HasSuffix(cmd, " echo readme-ok"):
		want(`^readme-ok\n$`)
	case strings.HasPrefix(cmd, "sftp "):
		want(`Remote working directory: /`)
	case strings.HasPrefix(cmd, "scp ") && strings.Contains(cmd, "app.log web1@"),
		strings.Contains(cmd, " -T app.log "):
		if got := dockerExec(t, r.name, "cat /tmp/app.log"); got != local() {
			t.Errorf("after %s the instance's /tmp/app.log is %q, want %q", cmd, got, local())
		}
	case strings.HasPrefix(cmd, "scp ") && strings.Contains(cmd, ":/var/log/app.log"):
		if got, want := local(), dockerExec(t, r.name, "cat /var/log/app.log"); got != want {
			t.Errorf("after %s ./app.log is %q, want %q", cmd, got, want)
		}
	case strings.Contains(cmd, " -o app.log "):
		if got, want := local(), dockerExec(t, r.name, "cat /tmp/app.log"); got != want {
			t.Errorf("after %s ./app.log is %q, want %q", cmd, got, want)
		}
	case strings.Contains(cmd, "/api/sessions"):
		want(`"instance":"` + regexp.QuoteMeta(r.name) + `"`)
	case strings.Contains(cmd, "/terminal/reset"):
		want(`"session":"[0-9a-f]+"`)
	}
}

// runForward starts the README's ssh -N -L with a free local port, serves
// a page on the instance's port 80 and fetches it through the forward.
func (r *readmeRun) runForward(t *testing.T, cmd string) {
	page := "readme-forward-" + randomHex(t, 8)
	dockerExec(t, r.name, "mkdir -p /www && echo "+page+" > /www/index.html && (pidof httpd >/dev/null || httpd -p 127.0.0.1:80 -h /www)")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	_ = l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c := exec.CommandContext(ctx, "bash", "-c", "exec "+r.concrete(cmd, port))
	c.Dir = r.work
	c.Env = append(os.Environ(), "PATH="+r.wrappers+":"+os.Getenv("PATH"), "HOME="+r.home)
	var errOut bytes.Buffer
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() { cancel(); _ = c.Wait() }()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var body string
	eventually(t, "the page is served through the forward", func() bool {
		resp, err := client.Get("http://127.0.0.1:" + port + "/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		body = b.String()
		return strings.Contains(body, page)
	})
	if t.Failed() {
		t.Logf("ssh -N -L stderr: %s; last body %q", errOut.String(), body)
	}
}

// get is a GET with the README's $TOKEN.
func (r *readmeRun) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.proc.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := (&http.Client{Timeout: waitFor, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}

// randomText is a few KiB of printable random text with a newline at the end.
func randomText(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3000)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b) + "\n"
}
