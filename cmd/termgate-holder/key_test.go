package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termgate/termgate/holder"
)

// The holder's key on this machine, no container needed: the gateway hands
// it over on the start exec's stdin, and no user of the instance can read
// it from a command line or an environment (/proc/PID/cmdline is
// world-readable; the shell inherits the environment).

// buildLocal builds this holder for the machine the test runs on.
func buildLocal(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "termgate-holder")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// holderDir is a fresh directory for a holder's socket (0700, as
// holder.CheckHome wants).
func holderDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "h")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestServeWithoutKeyStdinRefuses(t *testing.T) {
	bin := buildLocal(t)
	sock := filepath.Join(holderDir(t), "holder.sock")
	cmd := exec.Command(bin, "serve", "--socket", sock, "--session", "s1", "--", "/bin/sh")
	cmd.Stdin = bytes.NewReader(holder.KeyLine(testKey)) // a key, but not asked for
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "serve needs --key-stdin") {
		t.Fatalf("serve without --key-stdin: %v, %q; want a refusal that names --key-stdin", err, out)
	}
	if _, err := os.Stat(sock); err == nil {
		t.Fatal("a holder started without a key")
	}
	// With --key-stdin but no key line: refused as well.
	cmd = exec.Command(bin, "serve", "--key-stdin", "--socket", sock, "--session", "s1", "--", "/bin/sh")
	cmd.Stdin = strings.NewReader("not a key\n")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "key") {
		t.Fatalf("serve --key-stdin with no key: %v, %q; want a refusal", err, out)
	}
}

// serveConn is the start exec's stream ("serve --attach") after its status
// line.
type serveConn struct {
	r  *bufio.Reader
	in io.WriteCloser
}

func (c serveConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c serveConn) Write(p []byte) (int, error) { return c.in.Write(p) }
func (c serveConn) Close() error                { return c.in.Close() }

func TestKeyIsInNoCommandLineOrEnvironment(t *testing.T) {
	bin := buildLocal(t)
	sock := filepath.Join(holderDir(t), "holder.sock")
	cmd := exec.Command(bin, "serve", "--key-stdin", "--socket", sock, "--session", "s1", "--attach", "--idle", "1m",
		"--env", "PS1=$ ", "--", "/bin/sh", "-c", "sleep 4343 & exec /bin/sh")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if _, err := in.Write(holder.KeyLine(testKey)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "holder" {
		t.Fatalf("status line %q, %v", line, err)
	}
	daemon, _ := strconv.Atoi(f[1])
	t.Cleanup(func() { _ = syscall.Kill(daemon, syscall.SIGKILL) })
	c, _, err := holder.Dial(serveConn{r: r, in: in}, testKey, "gw", "", 0)
	if err != nil {
		t.Fatalf("Dial through the start exec: %v", err)
	}
	defer c.Close()
	shell := c.Hello.PID
	var got bytes.Buffer
	if _, err := c.Write([]byte("echo jo''b $(pgrep -f 'sleep 4343' || echo none)\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, c, &got, "job ")
	readUntil(t, c, &got, "\n")
	job := strings.Fields(got.String()[strings.LastIndex(got.String(), "job "):])
	pids := map[string]int{"the serve process": cmd.Process.Pid, "the holder daemon": daemon, "the shell": shell}
	if len(job) > 1 {
		if p, err := strconv.Atoi(job[1]); err == nil {
			pids["the shell's job"] = p
		}
	}
	hexKey := hex.EncodeToString(testKey)
	for who, pid := range pids {
		for _, file := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
			if err != nil {
				t.Fatalf("%s (pid %d): %v", who, pid, err)
			}
			if bytes.Contains(b, []byte(hexKey)) || bytes.Contains(b, testKey) {
				t.Errorf("the key is in /proc/%d/%s of %s", pid, file, who)
			}
		}
	}
	// Nor does the shell hold the pipe the key came on (pipes this test
	// inherited are no holder's).
	ours := map[string]bool{}
	for _, l := range fdLinks(t, "self") {
		ours[l] = true
	}
	for fd, l := range fdLinks(t, strconv.Itoa(shell)) {
		if strings.HasPrefix(l, "pipe:") && !ours[l] {
			t.Errorf("the shell has a pipe open (fd %s: %s): the key's or the status line's", fd, l)
		}
	}
	if err := c.End(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(daemon, 0) == nil && !zombie(daemon) {
		if time.Now().After(deadline) {
			t.Fatal("the holder daemon did not end with its session")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fdLinks maps the open descriptors of process pid to what they are.
func fdLinks(t *testing.T, pid string) map[string]string {
	t.Helper()
	fds, err := os.ReadDir("/proc/" + pid + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/" + pid + "/fd/" + fd.Name()); err == nil {
			m[fd.Name()] = l
		}
	}
	return m
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}
