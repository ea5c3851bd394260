package kubernetes

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// shell is a started Process with its output collected.
type shell struct {
	t    *testing.T
	p    sessions.Process
	out  *termtest.Stream
	seen int
	wg   sync.WaitGroup
}

func startShell(t *testing.T, b *Backend, pod string, spec sessions.StartSpec) *shell {
	t.Helper()
	inst, err := b.Lookup(context.Background(), pod)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", pod, err)
	}
	if spec.SessionID == "" {
		spec.SessionID = randomHex(8)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := b.Start(ctx, inst, spec)
	if err != nil {
		t.Fatalf("Start in %s: %v", pod, err)
	}
	s := &shell{t: t, p: p, out: termtest.NewStream()}
	s.wg.Go(func() { _, _ = io.Copy(s.out, p) })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := p.Kill(ctx); err != nil {
			t.Errorf("Kill at cleanup: %v", err)
		}
		s.wg.Wait()
	})
	return s
}

func (s *shell) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.p, line+"\r"); err != nil {
		s.t.Fatalf("type %q: %v", line, err)
	}
}

func (s *shell) expect(re string) []string {
	s.t.Helper()
	m, at := s.out.WaitFor(regexp.MustCompile(re), s.seen, 20*time.Second)
	if m == nil {
		s.t.Fatalf("no %q in the output within 20s:\n%q", re, s.out.String()[s.seen:])
	}
	s.seen = at
	return m
}

func TestShellHasATerminalMarkerAndResize(t *testing.T) {
	t.Parallel()
	b := clusterBackend(t, Config{GatewayID: "tgk8stest"})
	pod := runPod(t, nil)
	s := startShell(t, b, pod, sessions.StartSpec{SessionID: "abc123", Term: "vt220", Size: sessions.Size{Cols: 100, Rows: 30}})
	s.send(`echo "T=$TERM M=$TERMGATE_SESSION S=$(stty size) X=$((6*7))"`)
	s.expect(`T=vt220 M=tgk8stest\.abc123 S=30 100 X=42`)
	if err := s.p.Resize(context.Background(), sessions.Size{Cols: 132, Rows: 50}); err != nil {
		t.Fatal(err)
	}
	// The resize stream is asynchronous: ask until the shell sees it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.send(`echo "S=$(stty size)"`)
		if m := s.expect(`S=(\d+ \d+)`); m[1] == "50 132" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell never saw the resize to 132x50")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestExitCodeReachesWait(t *testing.T) {
	t.Parallel()
	b := clusterBackend(t, Config{})
	pod := runPod(t, nil)
	s := startShell(t, b, pod, sessions.StartSpec{})
	s.send("exit 7")
	s.wg.Wait() // the output ends with the shell
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, err := s.p.Wait(ctx)
	if err != nil || code != 7 {
		t.Fatalf("Wait = %d, %v; want 7", code, err)
	}
}

func TestKillEndsTheShellAndItsJobs(t *testing.T) {
	t.Parallel()
	b := clusterBackend(t, Config{})
	pod := runPod(t, nil)
	other := startShell(t, b, pod, sessions.StartSpec{})
	other.send("sleep 4321 & echo other-$((1+1))")
	other.expect("other-2")
	s := startShell(t, b, pod, sessions.StartSpec{})
	s.send("sleep 1234 & setsid sleep 1235 & echo started-$((1+1))")
	s.expect("started-2")
	if ps := markedProcesses(t, pod); len(ps) < 5 {
		t.Fatalf("marked processes before the kill: %q, want both shells and three sleeps", ps)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.p.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	s.wg.Wait() // Kill ends the output stream
	ps := strings.Join(markedProcesses(t, pod), "\n")
	if strings.Contains(ps, "sleep 1234") || strings.Contains(ps, "sleep 1235") {
		t.Errorf("the killed session's jobs live on:\n%s", ps)
	}
	if !strings.Contains(ps, "sleep 4321") {
		t.Errorf("the other session's job was killed too:\n%s", ps)
	}
	if err := s.p.Kill(ctx); err != nil {
		t.Errorf("a second Kill: %v", err)
	}
}

func TestSweepEndsOrphansOfThisGateway(t *testing.T) {
	t.Parallel()
	pod := runPod(t, nil)
	other := clusterBackend(t, Config{GatewayID: "tgother"})
	keep := startShell(t, other, pod, sessions.StartSpec{})
	keep.send("sleep 5678 & echo kept-$((1+1))")
	keep.expect("kept-2")

	b := clusterBackend(t, Config{GatewayID: "tgsweep"})
	inst, err := b.Lookup(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := b.Start(ctx, inst, sessions.StartSpec{SessionID: "orphan1"})
	if err != nil {
		t.Fatal(err)
	}
	out := termtest.NewStream()
	var copied sync.WaitGroup
	copied.Go(func() { _, _ = io.Copy(out, p) })
	if _, err := io.WriteString(p, "sleep 8765 & echo orphaned-$((1+1))\r"); err != nil {
		t.Fatal(err)
	}
	// Once the shell has run the job (input still in flight when the
	// stream closes can be lost: it failed so under load), the stream
	// goes, as when a gateway dies: the shell stays.
	if m, _ := out.WaitFor(regexp.MustCompile("orphaned-2"), 0, 20*time.Second); m == nil {
		t.Fatalf("the orphan's shell never ran the job: %q", out.String())
	}
	p.(*process).Abandon()
	copied.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(strings.Join(markedProcesses(t, pod), "\n"), "sleep 8765") {
		if time.Now().After(deadline) {
			t.Fatalf("the orphan's job never showed: %q", markedProcesses(t, pod))
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := b.Sweep(ctx); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	ps := strings.Join(markedProcesses(t, pod), "\n")
	if strings.Contains(ps, "sleep 8765") {
		t.Errorf("Sweep left this gateway's orphan:\n%s", ps)
	}
	if !strings.Contains(ps, "sleep 5678") {
		t.Errorf("Sweep ended another gateway's shell:\n%s", ps)
	}
}

func TestStartInADeletedPodIsNotFound(t *testing.T) {
	t.Parallel()
	b := clusterBackend(t, Config{})
	pod := runPod(t, nil)
	inst, err := b.Lookup(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	deletePod(t, pod, true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := b.Start(ctx, inst, sessions.StartSpec{SessionID: "gone1"})
	if !errors.Is(err, sessions.ErrNotFound) {
		if p != nil {
			_ = p.Kill(ctx)
		}
		t.Fatalf("Start in a deleted pod: %v, want ErrNotFound", err)
	}
	if _, err := b.Lookup(ctx, pod); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Lookup of a deleted pod: %v, want ErrNotFound", err)
	}
}
