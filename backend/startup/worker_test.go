package startup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/termgate/termgate/sessions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a backend for the Worker: per-instance failures and blocks, and
// a record of every call.
type fake struct {
	mu        sync.Mutex
	swept     map[string]int // successful sweeps per instance
	calls     []string       // sweep calls, in order
	fails     map[string]int // failures left per instance
	block     map[string]chan struct{}
	adoptFail map[string]int
	adopts    map[string]int
	running   int
	most      int // most sweeps at once
	listGate  chan struct{}
}

func newFake() *fake {
	return &fake{swept: map[string]int{}, fails: map[string]int{}, block: map[string]chan struct{}{},
		adoptFail: map[string]int{}, adopts: map[string]int{}}
}

func insts(n int) []sessions.Instance {
	out := make([]sessions.Instance, n)
	for i := range out {
		out[i] = sessions.Instance{Name: fmt.Sprintf("i%03d", i), ID: fmt.Sprintf("id%03d", i)}
	}
	return out
}

func (f *fake) list(list []sessions.Instance) func(context.Context) ([]sessions.Instance, error) {
	return func(ctx context.Context) ([]sessions.Instance, error) {
		if f.listGate != nil {
			select {
			case <-f.listGate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return list, nil
	}
}

func (f *fake) sweep(ctx context.Context, inst sessions.Instance) (int, error) {
	f.mu.Lock()
	f.calls = append(f.calls, inst.Name)
	f.running++
	f.most = max(f.most, f.running)
	block := f.block[inst.Name]
	fail := f.fails[inst.Name] > 0
	if fail {
		f.fails[inst.Name]--
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if fail {
		return 0, errors.New("engine said no")
	}
	f.mu.Lock()
	f.swept[inst.Name]++
	f.mu.Unlock()
	return 1, nil
}

func (f *fake) adopt(_ context.Context, inst sessions.Instance) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.swept[inst.Name] != 1 {
		return false, fmt.Errorf("adopt before the sweep in %s", inst.Name)
	}
	f.adopts[inst.Name]++
	if f.adoptFail[inst.Name] > 0 {
		f.adoptFail[inst.Name]--
		return false, errors.New("holder did not answer")
	}
	return true, nil
}

func (f *fake) sweptCount(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.swept[name]
}

// logBuf is a JSON logger into a buffer tests can read.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func config(f *fake, list []sessions.Instance, log *logBuf) Config {
	return Config{Name: "fake", List: f.list(list), Sweep: f.sweep, Adopt: f.adopt,
		Workers: 4, Timeout: 5 * time.Second, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		Logger: log.logger()}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSweepsEveryInstanceOnceAndLogsOneSummary(t *testing.T) {
	f, log := newFake(), &logBuf{}
	list := insts(60)
	w := Start(t.Context(), config(f, list, log))
	defer w.Stop()
	waitFor(t, "every instance is swept and adopted", w.Swept)
	for _, inst := range list {
		if n := f.sweptCount(inst.Name); n != 1 {
			t.Errorf("%s swept %d times, want once", inst.Name, n)
		}
		if f.adopts[inst.Name] != 1 {
			t.Errorf("%s adopted %d times, want once", inst.Name, f.adopts[inst.Name])
		}
	}
	if f.most > 4 {
		t.Errorf("%d sweeps ran at once, want at most Workers (4)", f.most)
	}
	waitFor(t, "the summary line", func() bool { return strings.Contains(log.String(), "start-up sweep done") })
	out := log.String()
	if n := strings.Count(out, "start-up sweep done"); n != 1 {
		t.Errorf("%d summary lines, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, `"instances":60`) || !strings.Contains(out, `"processes_ended":60`) || !strings.Contains(out, `"adopted":60`) {
		t.Errorf("summary lacks the counts:\n%s", out)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if len(line) > 1024 {
			t.Errorf("log line of %d bytes: %.200s...", len(line), line)
		}
	}
}

// One worker goes through the instances in the listing's order.
func TestSweepsInListingOrder(t *testing.T) {
	f, log := newFake(), &logBuf{}
	list := insts(20)
	cfg := config(f, list, log)
	cfg.Workers = 1
	w := Start(t.Context(), cfg)
	defer w.Stop()
	waitFor(t, "done", w.Swept)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, name := range f.calls {
		if name != list[i].Name {
			t.Fatalf("calls %v: want the listing's order", f.calls)
		}
	}
}

func TestRetriesFailuresWithBoundedLogs(t *testing.T) {
	f, log := newFake(), &logBuf{}
	list := insts(100)
	for _, inst := range list {
		f.fails[inst.Name] = 4 // the engine refuses everything four times
	}
	f.adoptFail["i007"] = 2
	w := Start(t.Context(), config(f, list, log))
	defer w.Stop()
	waitFor(t, "every instance is swept after its retries", w.Swept)
	for _, inst := range list {
		if n := f.sweptCount(inst.Name); n != 1 {
			t.Errorf("%s swept %d times, want once", inst.Name, n)
		}
	}
	if f.adopts["i007"] != 3 {
		t.Errorf("i007 adoption tried %d times, want 3 (two failures, then it)", f.adopts["i007"])
	}
	out := log.String()
	if !strings.Contains(out, `"retried":100`) {
		t.Errorf("summary does not count the retried instances:\n%.2000s", out)
	}
	if !strings.Contains(out, "some instances are not done yet") || !strings.Contains(out, `"not_done":`) {
		t.Errorf("no first-pass line saying what is left:\n%.2000s", out)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if len(line) > 1024 {
			t.Errorf("log line of %d bytes: %.200s...", len(line), line)
		}
	}
}

func TestGivesUpAdoptionAfterItsTries(t *testing.T) {
	f, log := newFake(), &logBuf{}
	list := insts(2)
	f.adoptFail["i001"] = 100
	cfg := config(f, list, log)
	cfg.AdoptTries = 3
	w := Start(t.Context(), cfg)
	defer w.Stop()
	waitFor(t, "done", w.Swept)
	if f.adopts["i001"] != 3 {
		t.Errorf("adoption tried %d times, want AdoptTries (3)", f.adopts["i001"])
	}
	waitFor(t, "the summary line", func() bool { return strings.Contains(log.String(), "start-up sweep done") })
	if !strings.Contains(log.String(), `"adoptions_left_to_attach":1`) {
		t.Errorf("summary does not count the adoption left to its attach:\n%s", log.String())
	}
}

// An attach waits for its own instance alone: with the only worker stuck
// on a slow instance, Wait on one far down the queue does it at once.
func TestWaitDoesItsInstanceNowAndAlone(t *testing.T) {
	f, log := newFake(), &logBuf{}
	list := insts(50)
	stuck := make(chan struct{})
	defer close(stuck)
	f.block["i000"] = stuck
	cfg := config(f, list, log)
	cfg.Workers = 1
	w := Start(t.Context(), cfg)
	defer w.Stop()
	waitFor(t, "the worker is stuck on i000", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.calls) > 0
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := w.Wait(ctx, list[40]); err != nil {
		t.Fatalf("Wait(i040): %v", err)
	}
	if f.sweptCount("i040") != 1 {
		t.Errorf("i040 swept %d times, want once before Wait returned", f.sweptCount("i040"))
	}
	if f.sweptCount("i001") != 0 {
		t.Errorf("i001 swept although the only worker is stuck: Wait did more than its instance")
	}
	if w.Swept() {
		t.Error("Swept with i000 stuck")
	}
}

// A failed sweep is Wait's error: a new shell would run beside the old.
func TestWaitFailsWhenItsSweepFails(t *testing.T) {
	f, log := newFake(), &logBuf{}
	list := insts(3)
	f.fails["i002"] = 1000
	w := Start(t.Context(), config(f, list, log))
	defer w.Stop()
	err := w.Wait(t.Context(), list[2])
	var ns *NotSweptError
	if !errors.As(err, &ns) || ns.Instance != "i002" || !strings.Contains(err.Error(), "engine said no") {
		t.Fatalf("Wait = %v, want a *NotSweptError for i002 with the cause", err)
	}
	if err := w.Wait(t.Context(), list[1]); err != nil {
		t.Errorf("Wait(i001) = %v: another instance's failure must not block it", err)
	}
}

// Before the listing is back, Wait sweeps its instance itself, and the
// listing does not sweep it again (that would kill the new shell).
func TestWaitBeforeTheListingSweepsOnce(t *testing.T) {
	f, log := newFake(), &logBuf{}
	list := insts(5)
	f.listGate = make(chan struct{})
	w := Start(t.Context(), config(f, list, log))
	defer w.Stop()
	if err := w.Wait(t.Context(), list[3]); err != nil {
		t.Fatalf("Wait before the listing: %v", err)
	}
	close(f.listGate)
	waitFor(t, "done", w.Swept)
	for _, inst := range list {
		if n := f.sweptCount(inst.Name); n != 1 {
			t.Errorf("%s swept %d times, want once", inst.Name, n)
		}
	}
}

// An instance that was not running at the listing has no earlier run's
// shells: Wait does not hold it up.
func TestWaitPassesAnInstanceStartedLater(t *testing.T) {
	f, log := newFake(), &logBuf{}
	w := Start(t.Context(), config(f, insts(3), log))
	defer w.Stop()
	waitFor(t, "done", w.Swept)
	later := sessions.Instance{Name: "later", ID: "idlater"}
	if err := w.Wait(t.Context(), later); err != nil {
		t.Fatalf("Wait(later) = %v", err)
	}
	if f.sweptCount("later") != 0 {
		t.Error("an instance started after the listing was swept")
	}
}

// Many attaches to instances being swept: each instance is swept exactly
// once, and every Wait returns only after its instance's sweep.
func TestConcurrentWaitsNeverSweepTwice(t *testing.T) {
	f, log := newFake(), &logBuf{}
	list := insts(40)
	for _, inst := range list[:20] {
		f.fails[inst.Name] = 1
	}
	w := Start(t.Context(), config(f, list, log))
	defer w.Stop()
	var wg sync.WaitGroup
	for i := range 200 {
		inst := list[i%len(list)]
		wg.Go(func() {
			for {
				err := w.Wait(t.Context(), inst)
				if err == nil {
					break
				}
				if !errors.As(err, new(*NotSweptError)) {
					t.Errorf("Wait(%s) = %v", inst.Name, err)
					return
				}
			}
			if n := f.sweptCount(inst.Name); n != 1 {
				t.Errorf("Wait(%s) returned with %d sweeps done", inst.Name, n)
			}
		})
	}
	wg.Wait()
	waitFor(t, "done", w.Swept)
	for _, inst := range list {
		if n := f.sweptCount(inst.Name); n != 1 {
			t.Errorf("%s swept %d times, want once", inst.Name, n)
		}
	}
}

// Stop ends the attempts in flight and the dispatcher (goleak checks no
// goroutine is left); a Wait then says the gateway is stopping.
func TestStopEndsTheWork(t *testing.T) {
	f, log := newFake(), &logBuf{}
	list := insts(20)
	never := make(chan struct{})
	defer close(never)
	for _, inst := range list {
		f.block[inst.Name] = never
	}
	w := Start(t.Context(), config(f, list, log))
	waitFor(t, "sweeps running", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.running == 4
	})
	w.Stop()
	if err := w.Wait(t.Context(), list[10]); !errors.Is(err, ErrStopped) {
		t.Errorf("Wait after Stop = %v, want ErrStopped", err)
	}
	if strings.Contains(log.String(), "failed") {
		t.Errorf("a stop was logged as failures:\n%s", log.String())
	}
}

// A Wait whose own context ends returns then, and the sweep goes on.
func TestWaitGivesUpWithItsContext(t *testing.T) {
	f, log := newFake(), &logBuf{}
	list := insts(1)
	release := make(chan struct{})
	f.block["i000"] = release
	w := Start(t.Context(), config(f, list, log))
	defer w.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := w.Wait(ctx, list[0]); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want its deadline", err)
	}
	close(release)
	waitFor(t, "done", w.Swept)
	if err := w.Wait(t.Context(), list[0]); err != nil {
		t.Errorf("Wait after the sweep = %v", err)
	}
}
