package kubernetes

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// The backend, not the registry, says how a shell ended: Read ends with
// the exit status of a shell that exited in a running pod (a signal exit
// included), and with sessions.ErrInstanceGone when the pod is deleted
// under the shell; for an ordinary exec and a held session alike. (Before
// the exec host, an ordinary exec's Read here ended with a bare io.EOF or a
// broken stream, and a held one's lost connection with io.EOF.)
func TestEndCauseFromTheAPIServer(t *testing.T) {
	t.Parallel()
	gone := func(err error) bool { return errors.Is(err, sessions.ErrInstanceGone) }
	exited := func(code int) func(error) bool {
		return func(err error) bool {
			var e *sessions.ExitError
			return errors.As(err, &e) && e.Code == code
		}
	}
	for _, tc := range []struct {
		name    string
		durable bool
		input   string // typed into the shell
		delete  bool   // delete the pod
		want    func(error) bool
		says    string
	}{
		{"exit 3", false, "exit 3", false, exited(3), "an ExitError with status 3"},
		{"kill -9 of the shell", false, "kill -9 $$", false, exited(137), "an ExitError with status 137"},
		{"pod deleted", false, "", true, gone, "ErrInstanceGone"},
		{"held: exit 3", true, "exit 3", false, exited(3), "an ExitError with status 3"},
		{"held: pod deleted", true, "", true, gone, "ErrInstanceGone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b *Backend
			if tc.durable {
				b, _ = durableBackend(t)
			} else {
				b = clusterBackend(t, Config{})
			}
			pod := runPod(t, nil)
			inst := lookupPod(t, b, pod)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p, err := b.Start(ctx, inst, sessions.StartSpec{SessionID: randomHex(8), Size: sessions.DefaultSize})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_ = p.Kill(ctx)
			})
			out := termtest.NewStream()
			ended := make(chan error, 1)
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := p.Read(buf)
					_, _ = out.Write(buf[:n])
					if err != nil {
						ended <- err
						return
					}
				}
			}()
			if _, err := p.Write([]byte("echo up-$((1+1))\r")); err != nil {
				t.Fatal(err)
			}
			if m, _ := out.WaitFor(regexp.MustCompile(`up-2`), 0, 20*time.Second); m == nil {
				t.Fatalf("the shell never ran: %q", out.String())
			}
			if tc.input != "" {
				if _, err := p.Write([]byte(tc.input + "\r")); err != nil {
					t.Fatal(err)
				}
			}
			if tc.delete {
				deletePod(t, pod, false)
			}
			select {
			case err := <-ended:
				if !tc.want(err) {
					t.Fatalf("Read ended with %v, want %s", err, tc.says)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("Read did not end within 60 s")
			}
		})
	}
}
