package screen

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// pipeBackend's shell prints what the test writes to out and records the
// sizes it is given.
type pipeBackend struct {
	floodBackend
	outR  *io.PipeReader
	outW  *io.PipeWriter
	mu    sync.Mutex
	sizes []sessions.Size
}

func (b *pipeBackend) Start(context.Context, sessions.Instance, sessions.StartSpec) (sessions.Process, error) {
	return &pipeProc{b: b}, nil
}

type pipeProc struct{ b *pipeBackend }

func (p *pipeProc) Read(buf []byte) (int, error)  { return p.b.outR.Read(buf) }
func (p *pipeProc) Write(buf []byte) (int, error) { return len(buf), nil }
func (p *pipeProc) Resize(_ context.Context, s sessions.Size) error {
	p.b.mu.Lock()
	p.b.sizes = append(p.b.sizes, s)
	p.b.mu.Unlock()
	return nil
}
func (p *pipeProc) Wait(context.Context) (int, error) { return 0, nil }
func (p *pipeProc) Kill(context.Context) error        { return p.b.outW.Close() }

// A client attaching with another window size gets the snapshot at the
// session's size, then the shell is resized; the emulator follows, so the
// next snapshot is at the new size.
func TestAttachWithAnotherSize(t *testing.T) {
	b := &pipeBackend{}
	b.outR, b.outW = io.Pipe()
	reg, err := sessions.New(sessions.Config{Backend: b, NewReplayer: NewReplayerFunc(Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Shutdown(context.Background())
	ctx := context.Background()
	small := sessions.Size{Cols: 40, Rows: 10}
	first, err := reg.Attach(ctx, "web1", sessions.AttachOptions{Size: small})
	if err != nil {
		t.Fatal(err)
	}
	fr := termtest.NewClientReader[sessions.Event](first)
	readReplay(t, first, fr) // a fresh session's: an empty screen
	const out = "\x1b[?1049h\x1b[5;5Hvi-like screen"
	go b.outW.Write([]byte(out))
	if _, err := io.ReadFull(fr, make([]byte, len(out))); err != nil {
		t.Fatal(err)
	}

	big := sessions.Size{Cols: 100, Rows: 30}
	second, err := reg.Attach(ctx, "web1", sessions.AttachOptions{Size: big})
	if err != nil {
		t.Fatal(err)
	}
	replay := readReplay(t, second, termtest.NewClientReader[sessions.Event](second))
	want := New(40, 10, 64<<10)
	want.Write([]byte(out))
	if !bytes.Equal(replay, want.Snapshot()) {
		t.Fatalf("replay at another size\n%q\nwant the snapshot at the session's 40x10\n%q", replay, want.Snapshot())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		sizes := append([]sessions.Size(nil), b.sizes...)
		b.mu.Unlock()
		if len(sizes) > 0 && sizes[len(sizes)-1] == big {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell's sizes %v, want it resized to %v after the attach", sizes, big)
		}
		time.Sleep(10 * time.Millisecond)
	}
	third, err := reg.Attach(ctx, "web1", sessions.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want.Resize(100, 30)
	if replay := readReplay(t, third, termtest.NewClientReader[sessions.Event](third)); !bytes.Equal(replay, want.Snapshot()) {
		t.Fatalf("the next snapshot\n%q\nwant it at 100x30\n%q", replay, want.Snapshot())
	}
	first.Detach()
	second.Detach()
	third.Detach()
}

// readReplay reads exactly c's replay from r, c's reader.
func readReplay(t *testing.T, c *sessions.Client, r io.Reader) []byte {
	t.Helper()
	out := make([]byte, c.Info().Replay)
	if _, err := io.ReadFull(r, out); err != nil {
		t.Fatal(err)
	}
	return out
}
