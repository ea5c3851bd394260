package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// Durable sessions in pods, against the real cluster: the holder binary is
// built once and named by TERMGATE_HOLDER_BINARY, as a gateway built
// without `make build` finds it (the gateways these tests run inherit it).

var (
	holderOnce   sync.Once
	holderErr    error
	holderBinDir string // removed by TestMain
)

func needHolder(t *testing.T) {
	t.Helper()
	needCluster(t)
	holderOnce.Do(func() {
		// A directory of this test process's own: backend/docker builds
		// one at the same time under go test ./... (TestMain removes it).
		dir, err := os.MkdirTemp("", "termgate-test-holder-")
		if err != nil {
			holderErr = err
			return
		}
		holderBinDir = dir
		bin := filepath.Join(dir, "termgate-holder")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s", "-o", bin, "../../cmd/termgate-holder")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			holderErr = fmt.Errorf("build the holder: %w: %s", err, out)
			return
		}
		holderErr = os.Setenv(holderbin.EnvBinary, bin)
	})
	if holderErr != nil {
		t.Fatal(holderErr)
	}
}

func durableBackend(t *testing.T) (*Backend, *termtest.SyncBuffer) {
	t.Helper()
	needHolder(t)
	logs := &termtest.SyncBuffer{}
	b := clusterBackend(t, Config{
		Durable:   exechost.Durable{Enabled: true, HolderSecret: []byte("termgate test deployment secret!")},
		GatewayID: "tgtest" + randomHex(3),
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
	})
	return b, logs
}

func lookupPod(t *testing.T, b *Backend, pod string) sessions.Instance {
	t.Helper()
	inst, err := b.Lookup(context.Background(), pod)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", pod, err)
	}
	return inst
}

// adopted is a held session one Backend adopted, with its output.
func adoptShell(t *testing.T, b *Backend, inst sessions.Instance) (*shell, sessions.HeldProcess) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := b.Adopt(ctx, inst, "")
	if err != nil {
		t.Fatalf("Adopt(%s): %v", inst.Name, err)
	}
	s := &shell{t: t, p: h, out: termtest.NewStream()}
	_, _ = s.out.Write(h.Held().Replay)
	s.wg.Go(func() { _, _ = io.Copy(s.out, h) })
	t.Cleanup(func() {
		_ = h.Release()
		s.wg.Wait()
	})
	return s, h
}

func heldPID(t *testing.T, s *shell) int {
	t.Helper()
	tag := "pid" + randomHex(3)
	s.send("echo " + tag + "=$$")
	pid, _ := strconv.Atoi(s.expect(tag + `=(\d+)`)[1])
	return pid
}

// A held session outlives the Backend that started it: another adopts it
// (HeldSessions finds it), with the replay and the same shell; a Kill
// ends the shell, its jobs and the holder.
//
// Not parallel: HeldSessions lists the held sessions of every pod under
// the run's label, and it must find this one's alone.
func TestHeldSessionOutlivesItsGatewayInAPod(t *testing.T) {
	b1, logs := durableBackend(t)
	pod := runPod(t, nil)
	inst := lookupPod(t, b1, pod)
	s1 := startShell(t, b1, pod, sessions.StartSpec{Term: "xterm", Size: sessions.DefaultSize})
	h1, ok := s1.p.(*heldProcess)
	if !ok {
		t.Fatalf("Start returned an ordinary %T, want a held session; log:\n%s", s1.p, logs)
	}
	if h1.Dir() != "/tmp" {
		t.Errorf("the holder runs from %s, want /tmp", h1.Dir())
	}
	pid := heldPID(t, s1)
	s1.send("sleep 4321 & echo before-$((40+2))")
	s1.expect("before-42")
	if err := h1.Release(); err != nil {
		t.Fatal(err)
	}
	s1.wg.Wait()

	b2, _ := durableBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	held, err := b2.HeldSessions(ctx)
	if err != nil || len(held) != 1 || held[0].Instance != inst || held[0].Name != "" {
		t.Fatalf("HeldSessions = %v, %v; want [%v]", held, err, inst)
	}
	s2, h2 := adoptShell(t, b2, inst)
	if got := h2.Held().Session; got == "" {
		t.Errorf("the adopted session has no id")
	}
	s2.expect("before-42") // the replay
	if got := heldPID(t, s2); got != pid {
		t.Errorf("adopted shell is PID %d, want %d", got, pid)
	}

	if err := h2.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	out := podSh(t, pod, "ps -o pid,args; ls -a /tmp/.termgate")
	if strings.Contains(out, "sleep 4321") || strings.Contains(out, "holder.sock\n") {
		t.Errorf("after Kill the pod still has:\n%s", out)
	}
	held, err = b2.HeldSessions(ctx)
	if err != nil || len(held) != 0 {
		t.Errorf("HeldSessions after Kill = %v, %v; want none", held, err)
	}
}

// The holder goes in with `tar x` where the container has tar, else with
// `cat >`; a read-only root filesystem with a writable /tmp takes it
// there; a pod that takes it nowhere gets an ordinary session and one
// warning, and its next session does not try again.
func TestHeldUploadPathsAndFallback(t *testing.T) {
	t.Parallel()
	b, logs := durableBackend(t)
	readOnly := func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: new(bool)}
		*p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = true
	}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		prep   string // run in the pod first
		dir    string // where the holder must run; "" for an ordinary session
	}{
		{"tar", nil, "", "/tmp"},
		{"cat", nil, "rm /bin/tar", "/tmp"},
		{"read-only-with-tmp", func(p *corev1.Pod) {
			readOnly(p)
			p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
		}, "", "/tmp"},
		{"read-only", readOnly, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := runPod(t, tc.mutate)
			if tc.prep != "" {
				podSh(t, pod, tc.prep)
			}
			warned := strings.Count(logs.String(), "level=WARN")
			s := startShell(t, b, pod, sessions.StartSpec{Size: sessions.DefaultSize})
			heldPID(t, s)
			h, held := s.p.(*heldProcess)
			newWarnings := strings.Count(logs.String(), "level=WARN") - warned
			switch {
			case tc.dir == "" && (held || newWarnings != 1 || !strings.Contains(logs.String(), "cannot hold a durable session")):
				t.Fatalf("got %T, log:\n%s\nwant an ordinary session and one warning", s.p, logs)
			case tc.dir != "" && (!held || h.Dir() != tc.dir || newWarnings != 0):
				t.Fatalf("got %T (%+v), log:\n%s\nwant a held session in %s", s.p, h, logs, tc.dir)
			}
			if tc.dir != "" {
				if out := podSh(t, pod, "ls -a "+tc.dir+"/.termgate"); strings.Count(out, "holder-") != 1 || strings.Contains(out, ".holder-") {
					t.Errorf("%s/.termgate holds:\n%s\nwant one installed holder and no staged upload", tc.dir, out)
				}
				return
			}
			// The next session is ordinary at once, with its own warning.
			start := time.Now()
			s2 := startShell(t, b, pod, sessions.StartSpec{Size: sessions.DefaultSize})
			heldPID(t, s2)
			if _, held := s2.p.(*heldProcess); held || strings.Count(logs.String(), "level=WARN")-warned != 2 || !strings.Contains(strings.ToLower(logs.String()), "read-only") {
				t.Fatalf("second Start (%s): %T, log:\n%s", time.Since(start), s2.p, logs)
			}
		})
	}
}

// Two Backends starting a session in one pod at once end up in one held
// shell.
func TestHeldStartsRacingMakeOneShellInAPod(t *testing.T) {
	t.Parallel()
	b1, _ := durableBackend(t)
	b2, _ := durableBackend(t)
	pod := runPod(t, nil)
	var (
		wg     sync.WaitGroup
		shells [2]*shell
	)
	for i, b := range []*Backend{b1, b2} {
		wg.Go(func() { shells[i] = startShell(t, b, pod, sessions.StartSpec{Size: sessions.DefaultSize}) })
	}
	wg.Wait()
	if shells[0] == nil || shells[1] == nil {
		t.FailNow()
	}
	p0, p1 := heldPID(t, shells[0]), heldPID(t, shells[1])
	if p0 != p1 {
		t.Errorf("racing starts made two shells (PIDs %d and %d)", p0, p1)
	}
	if a, b := shells[0].p.(*heldProcess).Held().Session, shells[1].p.(*heldProcess).Held().Session; a != b {
		t.Errorf("racing starts hold sessions %s and %s", a, b)
	}
}

// Adopt in a pod without a holder says ErrNotHeld; in a deleted pod,
// ErrNotFound.
func TestAdoptWithoutHolder(t *testing.T) {
	t.Parallel()
	b, _ := durableBackend(t)
	pod := runPod(t, nil)
	inst := lookupPod(t, b, pod)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := b.Adopt(ctx, inst, ""); !errors.Is(err, sessions.ErrNotHeld) {
		t.Errorf("Adopt without a holder: %v, want ErrNotHeld", err)
	}
	deletePod(t, pod, true)
	if _, err := b.Adopt(ctx, inst, ""); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Adopt in a deleted pod: %v, want ErrNotFound", err)
	}
}
