package docker

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

func TestStartMarksShell(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t)
	b := newBackend(t, Config{})
	tm, _, sid := startShell(t, b, name, sessions.DefaultSize)

	pid := shellPID(t, tm)
	env := dockerCLI(t, "exec", name, "sh", "-c", fmt.Sprintf(`tr '\0' '\n' </proc/%d/environ`, pid))
	for _, want := range []string{"TERMGATE_SESSION=" + sid, "TERM=xterm"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).MatchString(env) {
			t.Errorf("shell %d environment lacks %s:\n%s", pid, want, env)
		}
	}
	// The auto shell is a login shell (sh -l), leader of its own session.
	for _, p := range procs(t, name) {
		if p.PID == pid && (p.SID != pid || p.Args != "sh -l") {
			t.Errorf("shell = %+v, want a session leader running sh -l", p)
		}
	}
}

func TestStartRefusesStoppedContainer(t *testing.T) {
	needEngine(t)
	t.Parallel()
	ctx := testContext(t)
	name, _ := runContainer(t)
	b := newBackend(t, Config{})
	inst, err := b.Lookup(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	dockerCLI(t, "stop", "-t", "1", name)
	_, err = b.Start(ctx, inst, sessions.StartSpec{SessionID: randomHex(8), Size: sessions.DefaultSize})
	if !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("Start in a stopped container = %v, want ErrNotFound", err)
	}
}

func TestResize(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t)
	b := newBackend(t, Config{})
	tm, _, _ := startShell(t, b, name, sessions.Size{Cols: 132, Rows: 50})

	tm.write(t, "echo S=$(stty size).\n")
	tm.expect(t, `S=50 132\.`, 10*time.Second)

	if err := tm.p.Resize(testContext(t), sessions.Size{Cols: 100, Rows: 30}); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	tm.write(t, "echo S=$(stty size).\n")
	tm.expect(t, `S=30 100\.`, 10*time.Second)

	if err := tm.p.Resize(testContext(t), sessions.Size{Cols: 0, Rows: 30}); !errors.Is(err, sessions.ErrBadSize) {
		t.Errorf("Resize(0x30) = %v, want ErrBadSize", err)
	}
}

func TestWaitExitCode(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t)
	b := newBackend(t, Config{})
	tm, _, _ := startShell(t, b, name, sessions.DefaultSize)

	// A background job still holding the terminal must not delay the end.
	tm.write(t, "sleep 30 & exit 3\n")
	var exit *sessions.ExitError
	if err := tm.waitEnd(t, 10*time.Second); !errors.As(err, &exit) || exit.Code != 3 {
		t.Fatalf("Read ended with %v, want an ExitError with status 3", err)
	}
	code, err := tm.p.Wait(testContext(t))
	if err != nil || code != 3 {
		t.Fatalf("Wait = %d, %v; want 3", code, err)
	}
}

// The daemon's default detach keys (Ctrl-P Ctrl-Q) would hold back a lone
// Ctrl-P (previous history line) and let the pair orphan the shell.
func TestControlPReachesShell(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t)
	b := newBackend(t, Config{})
	tm, _, _ := startShell(t, b, name, sessions.DefaultSize)

	const line = "echo one-$((40+2))"
	tm.write(t, line+"\n")
	tm.expect(t, `one-42`, 10*time.Second)
	before := strings.Count(tm.output(), line)
	tm.write(t, "\x10") // Ctrl-P alone recalls the line
	for deadline := time.Now().Add(5 * time.Second); strings.Count(tm.output(), line) == before; {
		if time.Now().After(deadline) {
			t.Fatalf("Ctrl-P did not recall the last line:\n%q", tm.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	tm.write(t, "\x11") // Ctrl-Q: the default detach sequence is now complete
	time.Sleep(200 * time.Millisecond)
	tm.write(t, "\x03echo two-$((40+3))\n")
	tm.expect(t, `two-43`, 10*time.Second)
	if strings.Count(tm.output(), "one-42") != 1 {
		t.Errorf("recalled line ran again:\n%q", tm.output())
	}
}

func TestConcurrentWrites(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t)
	b := newBackend(t, Config{})
	tm, _, _ := startShell(t, b, name, sessions.DefaultSize)

	// Several writers, each sending whole commands; none may interleave
	// inside another's write.
	tm.write(t, "stty -echo\n")
	done := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := tm.p.Write([]byte(fmt.Sprintf("echo W%d-$((%d*1000+7))\n", i, i)))
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	for i := range 4 {
		tm.expect(t, fmt.Sprintf(`W%d-%d\b`, i, i*1000+7), 10*time.Second)
	}
}

// The auto shell prefers bash: a stand-in /bin/bash that records its
// arguments proves the choice and the login + interactive flags.
func TestStartPrefersBash(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t)
	dockerCLI(t, "exec", name, "sh", "-c", `printf '#!/bin/sh\nexport BASH_ARGS="$*"\nexec sh "$@"\n' >/bin/bash && chmod +x /bin/bash`)
	b := newBackend(t, Config{})
	tm, _, _ := startShell(t, b, name, sessions.DefaultSize)
	tm.write(t, "echo A=$BASH_ARGS.\n")
	tm.expect(t, `A=-il\.`, 10*time.Second)
}

func TestStartCustomShell(t *testing.T) {
	needEngine(t)
	t.Parallel()
	ctx := testContext(t)
	name, _ := runContainer(t)
	b := newBackend(t, Config{Shell: []string{"/bin/sh", "-c", "echo config-$((1+1)); exec sh"}})
	inst, err := b.Lookup(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		shell []string
		want  string
	}{
		{nil, `config-2`},
		{[]string{"/bin/sh", "-c", "echo spec-$((1+2)); exec sh"}, `spec-3`},
	} {
		p, err := b.Start(ctx, inst, sessions.StartSpec{SessionID: randomHex(8), Shell: c.shell, Size: sessions.DefaultSize})
		if err != nil {
			t.Fatalf("Start(%q): %v", c.shell, err)
		}
		startTerm(t, p).expect(t, c.want, 10*time.Second)
	}
}
