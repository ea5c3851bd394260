package exechost

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

// localPush is an Executor whose Exec runs argv on this machine through
// StartPush, as a push-style API does: the program's output is copied by
// os/exec, its input by a copier of localPush's own that, like
// client-go's, ends when StartPush closes the input after Run returned
// (the test waits for it: wg).
type localPush struct {
	Executor
	wg *sync.WaitGroup
}

func newLocalPush(t *testing.T) localPush {
	x := localPush{wg: new(sync.WaitGroup)}
	t.Cleanup(x.wg.Wait)
	return x
}

func (x localPush) Exec(_ context.Context, _ sessions.Instance, argv []string, opts ExecOptions) (Stream, error) {
	return StartPush(Push{
		Run: func(ctx context.Context, pio PushIO) error {
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Stdout, cmd.Stderr = pio.Stdout, pio.Stderr
			if pio.Stdin != nil {
				r, w, err := os.Pipe()
				if err != nil {
					return err
				}
				defer r.Close()
				cmd.Stdin = r
				x.wg.Go(func() {
					_, _ = io.Copy(w, pio.Stdin)
					w.Close()
				})
			}
			return cmd.Run()
		},
		Status: localStatus,
	}, opts), nil
}

func localStatus(err error) (int, error) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), nil
	}
	return -1, err
}

func TestPushStreamRunsACommand(t *testing.T) {
	ctx := context.Background()
	s, _ := newLocalPush(t).Exec(ctx, sessions.Instance{}, []string{"/bin/sh", "-c", "cat; echo oops >&2; exit 3"}, ExecOptions{Stdin: true})
	defer s.Close()
	if _, err := s.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	_ = s.CloseWrite()
	out, err := io.ReadAll(s)
	if err != nil || string(out) != "hello\n" {
		t.Errorf("output %q, %v", out, err)
	}
	if code, err := s.Wait(ctx); code != 3 || err != nil {
		t.Errorf("Wait = %d, %v; want 3", code, err)
	}
	if got := s.Stderr(); got != "oops" {
		t.Errorf("Stderr = %q", got)
	}
}

// A stream that ends without a status: Read ends with Broke's error, Wait
// with ErrNoStatus around NoStatus's.
func TestPushStreamBroke(t *testing.T) {
	lost := errors.New("connection lost")
	s := StartPush(Push{
		Run:      func(context.Context, PushIO) error { return lost },
		Status:   localStatus,
		Broke:    func(err error) error { return errors.New("broke: " + err.Error()) },
		NoStatus: func(err error) error { return errors.New("explained: " + err.Error()) },
	}, ExecOptions{})
	defer s.Close()
	if _, err := io.ReadAll(s); err == nil || err.Error() != "broke: connection lost" {
		t.Errorf("Read ended with %v", err)
	}
	if _, err := s.Wait(context.Background()); !errors.Is(err, ErrNoStatus) || !strings.Contains(err.Error(), "explained: connection lost") {
		t.Errorf("Wait = %v", err)
	}
}

// A TTY exec: AwaitUp returns once Run reads its input; Run takes the
// first size, then the latest of those queued meanwhile; Close ends Run.
func TestPushStreamTTY(t *testing.T) {
	sizes := make(chan sessions.Size, 4)
	s := StartPush(Push{
		Run: func(ctx context.Context, pio PushIO) error {
			if pio.Stderr != nil {
				return errors.New("stderr with a TTY")
			}
			go func() { // ends with the stream (Sizes says false)
				for sz, ok := pio.Sizes(); ok; sz, ok = pio.Sizes() {
					sizes <- sz
				}
				close(sizes)
			}()
			_, _ = io.Copy(pio.Stdout, pio.Stdin)
			<-ctx.Done()
			return ctx.Err()
		},
		Status: localStatus,
	}, ExecOptions{TTY: true, Stdin: true, Size: sessions.Size{Cols: 100, Rows: 30}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.AwaitUp(ctx); err != nil {
		t.Fatal(err)
	}
	if sz := <-sizes; sz != (sessions.Size{Cols: 100, Rows: 30}) {
		t.Errorf("first size %v", sz)
	}
	_ = s.Resize(ctx, sessions.Size{Cols: 90, Rows: 20})
	if sz := <-sizes; sz != (sessions.Size{Cols: 90, Rows: 20}) {
		t.Errorf("resized to %v", sz)
	}
	_, _ = s.Write([]byte("x"))
	buf := make([]byte, 8)
	if n, err := s.Read(buf); string(buf[:n]) != "x" || err != nil {
		t.Errorf("Read = %q, %v", buf[:n], err)
	}
	_ = s.Close()
	if _, ok := <-sizes; ok {
		t.Error("the size feeder outlived the stream")
	}
}

// AwaitUp: a stream that ends without a status fails the start; a context
// that ends first may have started it.
func TestPushStreamAwaitUpFails(t *testing.T) {
	refused := errors.New("403 Forbidden")
	s := StartPush(Push{Run: func(context.Context, PushIO) error { return refused }, Status: localStatus}, ExecOptions{TTY: true, Stdin: true})
	if err := s.AwaitUp(context.Background()); !errors.Is(err, refused) {
		t.Errorf("AwaitUp = %v, want the refusal", err)
	}
	s = StartPush(Push{Run: func(ctx context.Context, _ PushIO) error { <-ctx.Done(); return ctx.Err() }, Status: localStatus}, ExecOptions{TTY: true, Stdin: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.AwaitUp(ctx); !errors.Is(err, ErrMaybeStarted) {
		t.Errorf("AwaitUp after its context ended = %v, want ErrMaybeStarted", err)
	}
}
