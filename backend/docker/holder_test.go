package docker

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// Durable sessions against the real engine: the holder binary is built
// once (buildHolder, from TestMain) and named by TERMGATE_HOLDER_BINARY, as
// a gateway built without `make build` would find it.

// buildHolder builds cmd/termgate-holder for the tests, into a directory
// of this test process's own (backend/kubernetes builds one at the same
// time under go test ./...), which cleanup removes.
func buildHolder() (cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "termgate-test-holder-")
	if err != nil {
		return func() {}, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	bin := filepath.Join(dir, "termgate-holder")
	if err := goBuild(bin, "-s"); err != nil { // as make build does
		return cleanup, err
	}
	return cleanup, os.Setenv(holderbin.EnvBinary, bin)
}

func goBuild(out string, ldflags ...string) error {
	args := []string{"build", "-trimpath", "-o", out}
	if len(ldflags) > 0 {
		args = append(args, "-ldflags", strings.Join(ldflags, " "))
	}
	cmd := exec.Command("go", append(args, "../../cmd/termgate-holder")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the holder: %w: %s", err, b)
	}
	return nil
}

func durableBackend(t *testing.T, cfg Config) (*Backend, *termtest.SyncBuffer) {
	t.Helper()
	logs := &termtest.SyncBuffer{}
	cfg.Durable.Enabled = true
	if cfg.Label == "" {
		cfg.Label = runLabel // never another run's or another helper's containers
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if cfg.GatewayID == "" {
		cfg.GatewayID = "tgtest" + randomHex(3)
	}
	if cfg.HolderSecret == nil {
		cfg.HolderSecret = testSecret // one deployment, unless the test says otherwise
	}
	return newBackend(t, cfg), logs
}

// testSecret is the tests' deployment secret (Config.HolderSecret).
var testSecret = []byte("termgate test deployment secret!")

func heldOf(t *testing.T, p sessions.Process) sessions.HeldProcess {
	t.Helper()
	h, ok := p.(sessions.HeldProcess)
	if !ok {
		t.Fatalf("Start returned an ordinary %T, want a held session", p)
	}
	return h
}

func startHeld(t *testing.T, b *Backend, inst sessions.Instance) (*term, sessions.HeldProcess) {
	t.Helper()
	p, err := b.Start(testContext(t), inst, sessions.StartSpec{SessionID: randomHex(8), Term: "xterm", Size: sessions.DefaultSize})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	h := heldOf(t, p)
	return startTerm(t, h), h
}

func lookup(t *testing.T, b *Backend, name string) sessions.Instance {
	t.Helper()
	inst, err := b.Lookup(testContext(t), name)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", name, err)
	}
	return inst
}

// release drops a held connection and waits for its reader to end.
func release(t *testing.T, tm *term, h sessions.HeldProcess) {
	t.Helper()
	if err := h.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	tm.waitEOF(t, 10*time.Second)
}

func adopt(t *testing.T, b *Backend, inst sessions.Instance) (*term, sessions.HeldProcess) {
	t.Helper()
	h, err := b.Adopt(testContext(t), inst, "")
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	return startTerm(t, h), h
}

// heldProcs lists the live processes of the instance's held sessions and
// holders.
func heldProcs(t *testing.T, name string) []proc {
	return live(t, name, func(p proc) bool {
		return strings.Contains(p.Args, "sleep 4") || strings.Contains(p.Args, "holder-")
	})
}

func TestHeldSessionOutlivesItsGateway(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.held=" + randomHex(6) // HeldSessions sees this test's container only
	name, _ := runContainer(t, "--label", label)
	b1, _ := durableBackend(t, Config{Label: label})
	inst := lookup(t, b1, name)
	tm1, h1 := startHeld(t, b1, inst)
	pid := shellPID(t, tm1)
	tm1.write(t, "sleep 4242 & echo jo''b\n")
	tm1.expect(t, `job`, 10*time.Second)
	seen := string(h1.Held().Replay) + tm1.output() // from offset 0
	release(t, tm1, h1)

	// A new gateway (a new Backend value) adopts the same shell.
	b2, _ := durableBackend(t, Config{Label: label, GatewayID: "tgother"})
	held, err := b2.HeldSessions(testContext(t))
	if err != nil || len(held) != 1 || held[0].Instance.Name != name {
		t.Fatalf("HeldSessions = %v, %v; want just %s", held, err, name)
	}
	tm2, h2 := adopt(t, b2, held[0].Instance)
	st := h2.Held()
	if st.Session != h1.Held().Session || st.Created.IsZero() || st.Size != sessions.DefaultSize {
		t.Fatalf("adopted %+v, want session %s with its start time and size", st, h1.Held().Session)
	}
	// Offsets continue: the replay (all of the output so far) holds what
	// the first gateway read, at the same offsets.
	if end := st.Offset + int64(len(st.Replay)); st.Offset != 0 || end < int64(len(seen)) || !strings.HasPrefix(string(st.Replay), seen) {
		t.Fatalf("replay [%d,%d) %q; the first gateway read %d bytes %q", st.Offset, end, st.Replay, len(seen), seen)
	}
	if got := shellPID(t, tm2); got != pid {
		t.Fatalf("adopted shell has pid %d, want %d", got, pid)
	}
	if len(live(t, name, func(p proc) bool { return p.Args == "sleep 4242" })) != 1 {
		t.Fatalf("the background job did not survive:\n%v", procs(t, name))
	}
}

func TestHeldKillEndsEverything(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	b, _ := durableBackend(t, Config{})
	inst := lookup(t, b, name)
	tm, h := startHeld(t, b, inst)
	tm.write(t, "sleep 4343 & setsid sleep 4444 & echo jo''bs\n")
	tm.expect(t, `jobs`, 10*time.Second)
	if err := h.Kill(testContext(t)); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if left := heldProcs(t, name); len(left) > 0 {
		t.Fatalf("left after Kill: %v", left)
	}
	if _, err := b.Adopt(testContext(t), inst, ""); !errors.Is(err, sessions.ErrNotHeld) {
		t.Fatalf("Adopt after Kill = %v, want ErrNotHeld", err)
	}
}

func TestHeldResetMovesEveryGateway(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	b1, _ := durableBackend(t, Config{})
	b2, _ := durableBackend(t, Config{})
	inst := lookup(t, b1, name)
	tm1, h1 := startHeld(t, b1, inst)
	pid := shellPID(t, tm1)
	tm2, h2 := adopt(t, b2, inst)
	old, fresh := h1.Held().Session, randomHex(8)
	if err := h2.Reset(testContext(t), fresh); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	for i, tm := range []*term{tm1, tm2} {
		select {
		case <-tm.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("gateway %d: Read did not end after the reset", i+1)
		}
		var rerr *sessions.ResetError
		if !errors.As(tm.err, &rerr) || rerr.OldSession != old || rerr.NewSession != fresh {
			t.Fatalf("gateway %d: Read ended with %v, want a ResetError %s → %s", i+1, tm.err, old, fresh)
		}
	}
	_ = h1.Release()
	_ = h2.Release()
	tm3, h3 := adopt(t, b1, inst)
	if h3.Held().Session != fresh {
		t.Fatalf("after the reset the holder holds %q, want %q", h3.Held().Session, fresh)
	}
	if got := shellPID(t, tm3); got == pid {
		t.Fatalf("the reset kept shell %d", pid)
	}
}

func TestHeldIdleReapedWithoutGateway(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	b, _ := durableBackend(t, Config{Durable: exechost.Durable{IdleTimeout: 4 * time.Second}})
	inst := lookup(t, b, name)
	tm, h := startHeld(t, b, inst)
	h.Clients(1)
	tm.write(t, "sleep 4545 & echo jo''b\n")
	tm.expect(t, `job`, 10*time.Second)
	time.Sleep(5 * time.Second) // a client is attached: never reaped
	if len(heldProcs(t, name)) == 0 {
		t.Fatal("reaped with a client attached")
	}
	release(t, tm, h) // no gateway at all now
	deadline := time.Now().Add(15 * time.Second)
	for len(heldProcs(t, name)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not reaped with no gateway: %v", heldProcs(t, name))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := b.Adopt(testContext(t), inst, ""); !errors.Is(err, sessions.ErrNotHeld) {
		t.Fatalf("Adopt after reaping = %v, want ErrNotHeld", err)
	}
}

// The holder's own end of a session reaches the gateway as the registry's
// cause: idle reaping as ErrIdle, the shell's exit as an ExitError.
func TestHeldEndingsReachTheGateway(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	b, _ := durableBackend(t, Config{Durable: exechost.Durable{IdleTimeout: 4 * time.Second}})
	inst := lookup(t, b, name)
	tm, h := startHeld(t, b, inst)
	h.Clients(0) // the client that started it left
	select {
	case <-tm.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the idle session did not end")
	}
	if !errors.Is(tm.err, sessions.ErrIdle) {
		t.Fatalf("Read ended with %v, want ErrIdle", tm.err)
	}
	tm2, h2 := startHeld(t, b, inst)
	h2.Clients(1)
	tm2.write(t, "exit 7\n")
	<-tm2.done
	var exit *sessions.ExitError
	if !errors.As(tm2.err, &exit) || exit.Code != 7 {
		t.Fatalf("Read ended with %v, want an ExitError with status 7", tm2.err)
	}
	if code, err := h2.Wait(testContext(t)); code != 7 || err != nil {
		t.Fatalf("Wait = %d, %v; want 7", code, err)
	}
}

func TestHeldStartsRacingMakeOneShell(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel)
	var hs [2]sessions.HeldProcess
	var errs [2]error
	var wg sync.WaitGroup
	for i := range hs {
		b, _ := durableBackend(t, Config{})
		inst := lookup(t, b, name)
		wg.Go(func() {
			p, err := b.Start(testContext(t), inst, sessions.StartSpec{SessionID: randomHex(8), Size: sessions.DefaultSize})
			errs[i] = err
			if err == nil {
				hs[i], _ = p.(sessions.HeldProcess)
			}
		})
	}
	wg.Wait()
	for i := range hs {
		if errs[i] != nil || hs[i] == nil {
			t.Fatalf("Start %d: %v (%T)", i, errs[i], hs[i])
		}
		startTerm(t, hs[i])
	}
	if a, b := hs[0].Held().Session, hs[1].Held().Session; a != b {
		t.Fatalf("two racing Starts hold sessions %s and %s, want one", a, b)
	}
	shells := live(t, name, func(p proc) bool { return p.Args == "sh -l" })
	holders := live(t, name, func(p proc) bool { // the daemons, not the start execs bridging to them
		return strings.Contains(p.Args, " serve ") && !strings.Contains(p.Args, " --attach ")
	})
	if len(shells) != 1 || len(holders) != 1 {
		t.Fatalf("shells %v, holders %v; want one of each", shells, holders)
	}
}

// An instance that cannot run the holder gets an ordinary session and one
// warning; one whose /tmp is noexec gets the holder in the next directory.
func TestHeldFallsBackWhereTheHolderCannotRun(t *testing.T) {
	needEngine(t)
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		held string // the holder's directory, or "" for an ordinary session
	}{
		{"read-only", []string{"--read-only"}, ""},
		{"read-only-tmpfs", []string{"--read-only", "--tmpfs", "/tmp"}, ""},
		{"tmpfs-tmp", []string{"--tmpfs", "/tmp"}, "/"},
		{"noexec-volume", nil, "/"}, // /tmp: a volume the upload reaches, mounted noexec
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := tc.args
			if tc.name == "noexec-volume" {
				vol := "tgtest-noexec-" + randomHex(6)
				dockerCLI(t, "volume", "create", "--opt", "type=tmpfs", "--opt", "device=tmpfs", "--opt", "o=noexec,size=16m", vol)
				t.Cleanup(func() { _ = exec.Command("docker", "volume", "rm", "-f", vol).Run() })
				args = []string{"-v", vol + ":/tmp"}
			}
			name, _ := runContainer(t, append([]string{"--label", runLabel}, args...)...)
			b, logs := durableBackend(t, Config{})
			inst := lookup(t, b, name)
			p, err := b.Start(testContext(t), inst, sessions.StartSpec{SessionID: randomHex(8), Size: sessions.DefaultSize})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			tm := startTerm(t, p)
			shellPID(t, tm)
			h, held := p.(*heldProcess)
			warned := strings.Count(logs.String(), "level=WARN")
			switch {
			case tc.held == "" && (held || warned != 1 || !strings.Contains(logs.String(), "cannot hold a durable session")):
				t.Fatalf("got %T, log:\n%s\nwant an ordinary session and one warning", p, logs)
			case tc.held != "" && (!held || h.Dir() != tc.held || warned != 0):
				t.Fatalf("got %T in %v, log:\n%s\nwant a held session in %s", p, h, logs, tc.held)
			}
			if tc.name == "noexec-volume" {
				// The next session goes straight to "/": /tmp keeps the
				// one upload that could not run, not one per session.
				p2, err := b.Start(testContext(t), inst, sessions.StartSpec{SessionID: randomHex(8), Size: sessions.DefaultSize})
				if err != nil {
					t.Fatalf("second Start: %v", err)
				}
				startTerm(t, p2)
				if n := dockerCLI(t, "exec", name, "sh", "-c", "ls -a /tmp | grep -c '^.termgate-upload-'"); n != "1" {
					t.Fatalf("%s uploads left in the noexec /tmp, want 1", n)
				}
			}
			if tc.held != "" {
				return
			}
			// The next session there is ordinary too (without trying
			// the upload again), with its own warning.
			p2, err := b.Start(testContext(t), inst, sessions.StartSpec{SessionID: randomHex(8), Size: sessions.DefaultSize})
			if err != nil {
				t.Fatalf("second Start: %v", err)
			}
			shellPID(t, startTerm(t, p2))
			if _, held := p2.(*heldProcess); held || strings.Count(logs.String(), "level=WARN") != 2 {
				t.Fatalf("second Start: %T, log:\n%s", p2, logs)
			}
		})
	}
}

// The sweep of an earlier run's shells spares held ones (with and without
// a gateway id), and still ends leftover in-gateway ones.
func TestSweepSparesHeldShells(t *testing.T) {
	needEngine(t)
	t.Parallel()
	label := "termgate.sweep=" + randomHex(6) // the sweeps reach this test's container only
	name, _ := runContainer(t, "--label", label)
	b, _ := durableBackend(t, Config{Label: label})
	inst := lookup(t, b, name)
	tm, h := startHeld(t, b, inst)
	pid := shellPID(t, tm)
	release(t, tm, h)
	plain := newBackend(t, Config{Label: label})
	tmPlain, _, _ := startShell(t, plain, name, sessions.DefaultSize)
	plainPID := shellPID(t, tmPlain)
	for _, sweeper := range []*Backend{b, plain} {
		if err := sweeper.Sweep(testContext(t)); err != nil {
			t.Fatalf("Sweep: %v", err)
		}
	}
	if len(live(t, name, func(p proc) bool { return p.PID == plainPID })) != 0 {
		t.Fatal("the sweep left the in-gateway shell")
	}
	tm2, _ := adopt(t, b, inst)
	if got := shellPID(t, tm2); got != pid {
		t.Fatalf("after the sweep the held shell is %d, want %d", got, pid)
	}
}

// A holder of another protocol version (here 1: what a gateway upgraded
// past it meets) is left alone, with its shell: the gateway says so and
// starts nothing.
func TestHeldOtherProtocolVersionLeftAlone(t *testing.T) {
	needEngine(t)
	t.Parallel()
	old := filepath.Join(t.TempDir(), "termgate-holder")
	if err := goBuild(old, "-X", "main.proto=1"); err != nil {
		t.Fatal(err)
	}
	name, _ := runContainer(t, "--label", runLabel)
	dockerCLI(t, "exec", name, "mkdir", "-m", "700", "-p", "/tmp/.termgate")
	dockerCLI(t, "cp", old, name+":/tmp/.termgate/holder-old")
	serve := exec.Command("docker", "exec", "-i", name, "/tmp/.termgate/holder-old", "serve", "--key-stdin", "--socket", "/tmp/.termgate/holder.sock",
		"--session", "oldsession", "--", "sleep", "4646")
	serve.Stdin = strings.NewReader(string(holder.KeyLine(make([]byte, holder.KeyLen))))
	if out, err := serve.CombinedOutput(); err != nil {
		t.Fatalf("start the old holder: %v: %s", err, out)
	}
	b, _ := durableBackend(t, Config{})
	inst := lookup(t, b, name)
	var verr *holder.VersionError
	if _, err := b.Adopt(testContext(t), inst, ""); !errors.As(err, &verr) || verr.Theirs != 1 || !strings.Contains(err.Error(), "leaving that session alone") {
		t.Fatalf("Adopt = %v, want a VersionError saying the session is left alone", err)
	}
	if _, err := b.Start(testContext(t), inst, sessions.StartSpec{SessionID: randomHex(8), Size: sessions.DefaultSize}); !errors.As(err, &verr) {
		t.Fatalf("Start = %v, want the VersionError (no second shell beside the old holder's)", err)
	}
	if n := len(live(t, name, func(p proc) bool { return p.Args == "sleep 4646" || strings.Contains(p.Args, "holder-old serve") })); n != 2 {
		t.Fatalf("the old holder or its shell is gone:\n%v", procs(t, name))
	}
	if n := len(live(t, name, func(p proc) bool { return p.Args == "sh -l" })); n != 0 {
		t.Fatalf("a second shell was started beside the old holder:\n%v", procs(t, name))
	}
}

// TestMeasureHolder (TERMGATE_MEASURE_HOLDER=1) prints what a held session
// costs: the first Start (installing the holder), a later Start, an Adopt,
// against an ordinary Start.
func TestMeasureHolder(t *testing.T) {
	if os.Getenv("TERMGATE_MEASURE_HOLDER") != "1" {
		t.Skip("set TERMGATE_MEASURE_HOLDER=1 to measure")
	}
	needEngine(t)
	bin, err := holderbin.Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("holder binary: %d bytes (%s)", len(bin.Data), bin.From)
	const rounds = 5
	var first, later, adoptT, plainT time.Duration
	for range rounds {
		name, _ := runContainer(t, "--label", runLabel)
		b, _ := durableBackend(t, Config{})
		plain := newBackend(t, Config{Label: runLabel})
		inst := lookup(t, b, name)
		ctx := testContext(t)
		start := func(b *Backend) (sessions.Process, time.Duration) {
			t0 := time.Now()
			p, err := b.Start(ctx, inst, sessions.StartSpec{SessionID: randomHex(8), Size: sessions.DefaultSize})
			if err != nil {
				t.Fatal(err)
			}
			return p, time.Since(t0)
		}
		p, d := start(b)
		first += d
		_ = p.Kill(ctx)
		p, d = start(b)
		later += d
		_ = p.(sessions.HeldProcess).Release()
		t0 := time.Now()
		h, err := b.Adopt(ctx, inst, "")
		if err != nil {
			t.Fatal(err)
		}
		adoptT += time.Since(t0)
		_ = h.Kill(ctx)
		p, d = start(plain)
		plainT += d
		_ = p.Kill(ctx)
	}
	t.Logf("mean of %d: first held Start (install) %v, later held Start %v, Adopt %v, ordinary Start %v",
		rounds, first/rounds, later/rounds, adoptT/rounds, plainT/rounds)
}

var (
	glibcOnce sync.Once
	glibcErr  error
)

// runGlibc runs a container of the glibc image (built once per test run).
func runGlibc(t *testing.T, extra ...string) string {
	t.Helper()
	glibcOnce.Do(func() {
		out, err := exec.Command("bash", "../../scripts/test-image-glibc.sh").CombinedOutput()
		if err != nil {
			glibcErr = fmt.Errorf("scripts/test-image-glibc.sh: %w: %s", err, out)
		}
	})
	if glibcErr != nil {
		t.Fatal(glibcErr)
	}
	name := "tgtest-" + randomHex(6)
	args := append([]string{"run", "-d", "--init", "--network", "none", "--label", runLabel, "--name", name}, extra...)
	dockerCLI(t, append(args, "termgate-test:glibc")...)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	return name
}

// A glibc image with bash (scripts/test-image-glibc.sh: the host's bash and
// its libraries, built once and cached): the static holder runs there too,
// and the auto shell is bash.
func TestHeldSessionInAGlibcImageWithBash(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name := runGlibc(t)
	b, _ := durableBackend(t, Config{})
	inst := lookup(t, b, name)
	tm, h := startHeld(t, b, inst)
	tm.write(t, "echo V=$BASH_VERSION.\n")
	tm.expect(t, `V=5\.[0-9.]+\(`, 10*time.Second)
	pid := shellPID(t, tm)
	release(t, tm, h)
	tm2, _ := adopt(t, b, inst)
	if got := shellPID(t, tm2); got != pid {
		t.Fatalf("adopted bash %d, want %d", got, pid)
	}
}

// A container running as a non-root user (the glibc image: the busybox
// one's root directory admits root only): the upload is given to that
// user, who runs the holder and owns its directory.
func TestHeldSessionAsNonRootUser(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name := runGlibc(t, "--user", "1000:1000")
	b, logs := durableBackend(t, Config{})
	inst := lookup(t, b, name)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	tm, h := startHeld(t, b, inst)
	tm.write(t, "echo U=$(id -u).\n")
	tm.expect(t, `U=1000\.`, 10*time.Second)
	pid := shellPID(t, tm)
	release(t, tm, h)
	tm2, _ := adopt(t, b, inst)
	if got := shellPID(t, tm2); got != pid {
		t.Fatalf("adopted shell %d, want %d", got, pid)
	}
}

func TestNumericUser(t *testing.T) {
	for _, tc := range []struct {
		user     string
		uid, gid int
		ok       bool
	}{
		{"", 0, 0, true}, {"1000", 1000, 0, true}, {"1000:1001", 1000, 1001, true},
		{"app", 0, 0, false}, {"1000:staff", 0, 0, false}, {"-1", 0, 0, false}, {"1:-2", 0, 0, false},
	} {
		uid, gid, ok := numericUser(tc.user)
		if uid != tc.uid || gid != tc.gid || ok != tc.ok {
			t.Errorf("numericUser(%q) = %d, %d, %v; want %d, %d, %v", tc.user, uid, gid, ok, tc.uid, tc.gid, tc.ok)
		}
	}
}
