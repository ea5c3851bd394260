package local

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readUntil reads from p until re matches the accumulated output.
func readUntil(t *testing.T, p sessions.Process, re *regexp.Regexp) []string {
	t.Helper()
	var out bytes.Buffer
	deadline := time.Now().Add(10 * time.Second)
	if lp, ok := p.(*process); ok { // a silent shell must not hang the test
		_ = lp.ptmx.SetReadDeadline(deadline)
		defer lp.ptmx.SetReadDeadline(time.Time{})
	}
	buf := make([]byte, 4096)
	for time.Now().Before(deadline) {
		n, err := p.Read(buf)
		out.Write(buf[:n])
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
		if err != nil {
			t.Fatalf("read: %v; output so far %q", err, out.String())
		}
	}
	t.Fatalf("no match for %v in %q", re, out.String())
	return nil
}

func start(t *testing.T) sessions.Process {
	t.Helper()
	b := New(Config{})
	inst, err := b.Lookup(context.Background(), "dev")
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Start(context.Background(), inst, sessions.StartSpec{SessionID: "abc", Shell: []string{"/bin/sh"}, Term: "xterm", Size: sessions.Size{Cols: 100, Rows: 30}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(context.Background()) })
	return p
}

func TestKillEndsBackgroundJobs(t *testing.T) {
	p := start(t)
	io.WriteString(p, "sleep 1001 & echo BG=$! SHELL=$$\n")
	m := readUntil(t, p, regexp.MustCompile(`BG=(\d+) SHELL=(\d+)`))
	bg, _ := strconv.Atoi(m[1])
	shell, _ := strconv.Atoi(m[2])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if live := liveInSessions(t, []int{shell}); len(live) > 0 {
		t.Errorf("processes of the session alive after Kill: %q (shell %d, background job %d)", live, shell, bg)
	}
}

// Read ends with how the shell ended, known once it is reaped: its exit
// status, or 128+signal when a signal killed it (Wait says the same).
func TestReadEndsWithTheExitStatus(t *testing.T) {
	for script, want := range map[string]int{"stty size; exit 3\n": 3, "stty size; kill -9 $$\n": 137} {
		p := start(t)
		io.WriteString(p, script)
		readUntil(t, p, regexp.MustCompile(`30 100`))
		buf := make([]byte, 1024)
		var err error
		for err == nil {
			_, err = p.Read(buf)
		}
		var ee *sessions.ExitError
		if !errors.As(err, &ee) || ee.Code != want {
			t.Fatalf("%q: Read ended with %v, want exit status %d", script, err, want)
		}
		code, err := p.Wait(context.Background())
		if err != nil || code != want {
			t.Fatalf("%q: Wait = %d, %v; want %d", script, code, err, want)
		}
	}
}

// After Kill, Read ends with io.EOF: the end is the kill's.
func TestReadAfterKillIsEOF(t *testing.T) {
	p := start(t)
	io.WriteString(p, "echo up\n")
	readUntil(t, p, regexp.MustCompile(`up`))
	if err := p.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1024)
	var err error
	for err == nil {
		_, err = p.Read(buf)
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("Read after Kill ended with %v, want io.EOF", err)
	}
}

func TestLookupAllowList(t *testing.T) {
	b := New(Config{Instances: []string{"web1"}})
	if _, err := b.Lookup(context.Background(), "web2"); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("Lookup(web2) = %v, want ErrNotFound", err)
	}
	if _, err := b.Lookup(context.Background(), "../etc"); !errors.Is(err, sessions.ErrBadName) {
		t.Fatalf("Lookup(../etc) = %v, want ErrBadName", err)
	}
}
