package record

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

// terminalOutput is 32 KiB of what shells print: text, escapes, UTF-8.
var terminalOutput = bytes.Repeat([]byte("drwxr-xr-x 2 root root 4096 \x1b[01;34mcafé\x1b[0m\r\n\"quoted\"\t€ ok\r\n"), 32<<10/64)[:32<<10]

// BenchmarkEncode: the writer goroutine's CPU per byte of output.
func BenchmarkEncode(b *testing.B) {
	var enc encoder
	var dst []byte
	b.SetBytes(int64(len(terminalOutput)))
	for i := 0; b.Loop(); i++ {
		dst = enc.output(dst[:0], time.Duration(i), terminalOutput)
	}
}

// discard is a disk that takes everything at once.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Sync() error                 { return nil }
func (discard) Close() error                { return nil }

// BenchmarkOutput: what the session's pump pays per chunk of output when
// recording (the encoding and the writing are the recording goroutine's).
// Run it with a fixed count: go test -bench Output -benchtime 1000000x.
func BenchmarkOutput(b *testing.B) {
	r, err := New(Config{QueueBytes: 1 << 40, create: func(string, string) (file, error) { return discard{}, nil }})
	if err != nil {
		b.Fatal(err)
	}
	obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "bench", Size: sessions.Size{Cols: 80, Rows: 24}})
	chunk := terminalOutput[:100]
	for i := 0; i < b.N; i++ {
		obs.Output(chunk)
	}
	b.StopTimer()
	obs.Close()
	if err := r.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWrite: how fast a recording reaches this machine's disk (until
// synced and closed), nothing dropped. Run it with a fixed count:
// go test -bench Write -benchtime 2000x (64 MiB).
func BenchmarkWrite(b *testing.B) {
	r, err := New(Config{Dir: filepath.Join(b.TempDir(), "rec"), QueueBytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	rec := r.Start(sessions.ObservedSession{Instance: "web1", Session: "bench", Size: sessions.Size{Cols: 80, Rows: 24}})
	b.SetBytes(int64(len(terminalOutput)))
	for i := 0; i < b.N; i++ {
		rec.Output(terminalOutput)
	}
	rec.Close()
	if err := r.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkScan: how fast a restarted gateway reads a durable session's
// recording before continuing it (the session's output waits in the
// recording's queue meanwhile). go test -bench Scan -run '^$' ./record/
func BenchmarkScan(b *testing.B) {
	var enc encoder
	buf := []byte(`{"version":2,"width":80,"height":24,"timestamp":1700000000}` + "\n")
	buf = appendOffset(buf, 0, 0)
	for i := 0; len(buf) < 32<<20; i++ {
		buf = enc.output(buf, time.Duration(i)*time.Millisecond, terminalOutput[:4096])
	}
	b.SetBytes(int64(len(buf)))
	now := time.Now()
	for b.Loop() {
		t, err := scan(bytes.NewReader(buf), now)
		if err != nil || !t.known {
			b.Fatal(err, t.known)
		}
	}
}
