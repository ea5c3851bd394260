package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/holder"
)

// The holder in a real container (the docker CLI stands in for the
// gateway's Engine API calls): copied in, started with an exec, reached
// through "attach" execs; a gateway that dies mid-session (its exec is
// killed) loses nothing.

const testImage = "termgate-test:busybox"

// testKey is the tests' holder key.
var testKey = bytes.Repeat([]byte{5}, holder.KeyLen)

func needDocker(t *testing.T) {
	t.Helper()
	err := exec.Command("docker", "image", "inspect", testImage).Run()
	if err == nil {
		return
	}
	if os.Getenv("TERMGATE_REQUIRE_DOCKER") == "1" {
		t.Fatalf("TERMGATE_REQUIRE_DOCKER=1 but the engine or %s is unusable: %v", testImage, err)
	}
	t.Skipf("no Docker engine with %s (set TERMGATE_REQUIRE_DOCKER=1 to fail instead): %v", testImage, err)
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// execStream is one "termgate-holder attach" exec: a gateway's connection.
type execStream struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out io.ReadCloser
}

func (e *execStream) Read(p []byte) (int, error)  { return e.out.Read(p) }
func (e *execStream) Write(p []byte) (int, error) { return e.in.Write(p) }
func (e *execStream) Close() error {
	e.in.Close()
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
	return nil
}

func attachExec(t *testing.T, ctr, sock string) *execStream {
	t.Helper()
	cmd := exec.Command("docker", "exec", "-i", ctr, "/tmp/.termgate-holder", "attach", sock)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &execStream{cmd: cmd, in: in, out: out}
}

// readUntil reads from c until want appears.
func readUntil(t *testing.T, c *holder.Client, got *bytes.Buffer, want string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for !strings.Contains(got.String(), want) {
			n, err := c.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waiting for %q: %v (got %q)", want, err, got.String())
		}
	case <-time.After(20 * time.Second):
		c.Close()
		<-done
		t.Fatalf("timed out waiting for %q (got %q)", want, got.String())
	}
}

func TestHolderInARealContainerSurvivesItsGateway(t *testing.T) {
	needDocker(t)
	bin := filepath.Join(t.TempDir(), "termgate-holder")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ctr := "tg-holder-test-" + hex.EncodeToString(b)
	docker(t, "run", "-d", "--name", ctr, "--network", "none", testImage, "sleep", "100000")
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", ctr).Run() })
	docker(t, "cp", bin, ctr+":/tmp/.termgate-holder")
	sock := "/tmp/.termgate/s1.sock"
	serve := exec.Command("docker", "exec", "-i", ctr, "/tmp/.termgate-holder", "serve", "--key-stdin", "--socket", sock, "--session", "s1",
		"--env", "TERM=dumb", "--env", "PS1=$ ", "--", "/bin/sh")
	serve.Stdin = bytes.NewReader(holder.KeyLine(testKey))
	out, err := serve.CombinedOutput()
	if !strings.HasPrefix(string(out), "holder ") {
		t.Fatalf("serve printed %q (%v)", out, err)
	}

	// Gateway 1 attaches, starts a background job, then dies.
	c1, _, err := holder.Dial(attachExec(t, ctr, sock), testKey, "gw1", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	pid := c1.Hello.PID
	var got bytes.Buffer
	if _, err := c1.Write([]byte("sleep 4242 & echo pid=$$ jo\"\"b\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, c1, &got, "pid="+strconv.Itoa(pid)+" job")
	resume := c1.Offset()
	c1.Close() // kill the exec: what a gateway crash does to it

	// Gateway 2 resumes exactly where gateway 1 stopped, in the same shell.
	c2, rep2, err := holder.Dial(attachExec(t, ctr, sock), testKey, "gw2", "s1", resume)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if c2.Hello.PID != pid || rep2.Gap {
		t.Fatalf("after the crash: pid %d (want %d), gap %v", c2.Hello.PID, pid, rep2.Gap)
	}
	got.Reset()
	if _, err := c2.Write([]byte("echo again=$$\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, c2, &got, "again="+strconv.Itoa(pid))
	if ps := docker(t, "exec", ctr, "ps"); !strings.Contains(ps, "sleep 4242") {
		t.Fatalf("the background job did not survive the gateway:\n%s", ps)
	}
	// Ending the session kills everything it started; the holder exits.
	if err := c2.End(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps := docker(t, "exec", ctr, "ps")
		// Zombies show as [name]: the container's PID 1 (sleep) reaps nothing.
		if !strings.Contains(ps, "sleep 4242") && !strings.Contains(ps, "termgate-holder serve") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind after End:\n%s", ps)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
