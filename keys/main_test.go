package keys

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	gossh "golang.org/x/crypto/ssh"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testKey returns a deterministic ed25519 public key (a different one for
// every n) and its authorized_keys form without comment.
func testKey(t testing.TB, n byte) (gossh.PublicKey, string) {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = n
	priv := ed25519.NewKeyFromSeed(seed)
	pub, err := gossh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pub, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(pub)))
}

// testSigner returns a deterministic ed25519 signer.
func testSigner(t testing.TB, n byte) gossh.Signer {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = n
	s, err := gossh.NewSignerFromKey(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tcp(ip string) net.Addr {
	return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}
}

// eventually polls cond until it holds or a 5 s deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// logRecorder is a slog handler that keeps "LEVEL message attrs" lines.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.lines = append(r.lines, b.String())
	r.mu.Unlock()
	return nil
}

func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

// count returns how many recorded lines contain s.
func (r *logRecorder) count(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// g is the one grant of a key, certificate or token identity (a zero
// Grant when it has none).
func g(id Identity) Grant {
	if len(id.Grants) == 0 {
		return Grant{}
	}
	return id.Grants[0]
}
