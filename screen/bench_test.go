package screen

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/ring"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// scrolling returns about n bytes of output that scrolls: plain log lines,
// coloured ls-style lines, a compiler's coloured diagnostics, bulk ASCII
// without a newline (every row is filled and wraps, as `tr '\0' x` of
// /dev/zero prints), or CJK and emoji.
func scrolling(kind string, n int) []byte {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		switch kind {
		case "plain":
			fmt.Fprintf(&b, "2026-11-30T10:00:00Z INFO request served path=/api/v1/items/%d status=200 dur=%dms\r\n", i, i%97)
		case "colour":
			fmt.Fprintf(&b, "\x1b[01;34mdir%d\x1b[0m  \x1b[01;32mexec%d\x1b[0m  file%d.txt  \x1b[01;31marchive%d.tgz\x1b[0m\r\n", i, i, i, i)
		case "gcc":
			fmt.Fprintf(&b, "\x1b[01m\x1b[Ksrc/pkg/file%d.c:%d:5:\x1b[m\x1b[K \x1b[01;35m\x1b[Kwarning: \x1b[m\x1b[Kunused variable \u2018tmp%d\u2019 [\x1b[01;35m\x1b[K-Wunused-variable\x1b[m\x1b[K]\r\n", i%50, i, i)
			fmt.Fprintf(&b, "  %d |     int tmp%d = compute(a, b, c);\r\n      |         \x1b[01;35m\x1b[K^~~~\x1b[m\x1b[K\r\n", i, i)
		case "wrap":
			b.WriteString(strings.Repeat("x", 1000))
		case "cjk":
			fmt.Fprintf(&b, "日本語のテキスト %d 🙂 ünïcödé\r\n", i)
		}
	}
	return []byte(b.String())
}

// BenchmarkEmulator is the emulator's throughput on scrolling output fed
// in 4 KiB writes at 120x40 (go test -bench Emulator ./screen/).
func BenchmarkEmulator(b *testing.B) {
	for _, kind := range []string{"plain", "colour", "gcc", "wrap", "cjk"} {
		data := scrolling(kind, 4<<20)
		b.Run(kind, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			start := cpuTime()
			for b.Loop() {
				t := New(120, 40, 128<<10)
				for off := 0; off < len(data); off += 4096 {
					t.Write(data[off:min(off+4096, len(data))])
				}
			}
			b.ReportMetric(float64(len(data))*float64(b.N)/(cpuTime()-start).Seconds()/1e6, "cpu-MB/s")
		})
	}
}

// BenchmarkSnapshot is the snapshot of a 200x50 coloured screen with 1,000
// lines of scrollback (target: under 2 ms).
func BenchmarkSnapshot(b *testing.B) {
	t := New(200, 50, 4<<20)
	for i := range 1050 {
		fmt.Fprintf(t, "\x1b[3%dm%04d\x1b[0m %s \x1b[1;4mbold\x1b[0m 日本語\r\n", i%8, i, strings.Repeat("text ", 30))
	}
	if n := t.ScrollbackLines(); n < 1000 {
		b.Fatalf("%d lines of scrollback, want 1000", n)
	}
	var size int
	start := cpuTime()
	for b.Loop() {
		size = len(t.Snapshot())
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(size), "snapshot-bytes")
}

// BenchmarkIdleSessionMemory is the heap one idle session's replay state
// holds after 64 KiB of coloured output at 80x24: the raw ring alone, or
// the ring with the screen replayer (go test -bench IdleSessionMemory -benchtime 1x).
func BenchmarkIdleSessionMemory(b *testing.B) {
	out := scrolling("colour", 64<<10)
	for _, mode := range []string{"raw", "screen"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
			}
			const n = 50
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			keep := make([]sessions.Replayer, n)
			for i := range keep {
				ring := ring.New(64 << 10)
				var r sessions.Replayer
				if mode == "raw" {
					r = sessions.NewRawReplayer(ring)
				} else {
					r = NewReplayerFunc(Options{})(ring, func([]byte) {})
				}
				r.Resize(sessions.Size{Cols: 80, Rows: 24})
				ring.Write(out)
				r.Write(out)
				r.Replay() // caught up and idle
				keep[i] = r
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/session")
			for _, r := range keep {
				r.Close()
			}
		})
	}
}

// BenchmarkRelay is the session's relay throughput to one attached client
// with each replay strategy, in the same run (screen must stay within 0.95x
// of raw: the emulator is off the relay's path).
func BenchmarkRelay(b *testing.B) {
	chunk := scrolling("colour", 32<<10)
	const total = 32 << 20
	for _, mode := range []string{"raw", "screen"} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(total)
			start := cpuTime()
			for b.Loop() {
				relayOnce(b, mode, chunk, total)
			}
			b.ReportMetric(float64(total)*float64(b.N)/(cpuTime()-start).Seconds()/1e6, "cpu-MB/s")
		})
	}
}

func relayOnce(b *testing.B, mode string, chunk []byte, total int) {
	fb := &floodBackend{chunk: chunk, total: total, go_: make(chan struct{})}
	cfg := sessions.Config{Backend: fb}
	if mode == "screen" {
		cfg.NewReplayer = NewReplayerFunc(Options{})
	}
	reg, err := sessions.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c, err := reg.Attach(context.Background(), "bench", sessions.AttachOptions{Size: sessions.Size{Cols: 120, Rows: 40}})
	if err != nil {
		b.Fatal(err)
	}
	close(fb.go_)
	_, _ = io.Copy(io.Discard, termtest.NewClientReader[sessions.Event](c)) // until the shell's end
	_ = reg.Shutdown(context.Background())
}

// floodBackend's shell prints total bytes of chunk as fast as it is read,
// once go_ is closed, then exits.
type floodBackend struct {
	chunk []byte
	total int
	go_   chan struct{}
}

func (f *floodBackend) Lookup(_ context.Context, name string) (sessions.Instance, error) {
	return sessions.Instance{Name: name, ID: name}, nil
}
func (f *floodBackend) Start(context.Context, sessions.Instance, sessions.StartSpec) (sessions.Process, error) {
	return &floodProc{f: f, left: f.total, killed: make(chan struct{})}, nil
}
func (f *floodBackend) Watch(ctx context.Context, _ func(sessions.InstanceEvent)) error {
	<-ctx.Done()
	return nil
}
func (f *floodBackend) Sweep(context.Context) error { return nil }
func (f *floodBackend) Ping(context.Context) error  { return nil }

type floodProc struct {
	f      *floodBackend
	left   int
	once   sync.Once
	killed chan struct{}
}

func (p *floodProc) Read(b []byte) (int, error) {
	<-p.f.go_
	if p.left <= 0 {
		return 0, io.EOF // the shell exits
	}
	n := copy(b, p.f.chunk[:min(len(p.f.chunk), p.left)])
	p.left -= n
	return n, nil
}
func (p *floodProc) Write(b []byte) (int, error)                 { return len(b), nil }
func (p *floodProc) Resize(context.Context, sessions.Size) error { return nil }
func (p *floodProc) Wait(context.Context) (int, error)           { return 0, nil }
func (p *floodProc) Kill(context.Context) error                  { p.once.Do(func() { close(p.killed) }); return nil }

// cpuTime is the process's user and system CPU time: on a shared, loaded
// machine it measures the work better than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
