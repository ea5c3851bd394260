package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// shellPIDRe matches what startBackgroundJob makes each shell print; the
// marker is built by the shell ($((…))), so the echo of the typed command
// line never matches.
var shellPIDRe = regexp.MustCompile(`JOB-READY SHELL=(\d+) BG=(\d+)`)

// newRegistry returns a registry over a local backend running shell.
func newRegistry(t testing.TB, shell ...string) *sessions.Registry {
	t.Helper()
	reg, err := sessions.New(sessions.Config{Backend: New(Config{}), Shell: shell})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// openSessions starts n sessions (instances prefix0…prefix{n-1}), each
// resized once and running cmd in the background, detaches from them and
// returns the shells' pids (each shell is its session's leader, so its pid
// is the session id). At most par sessions start at once.
func openSessions(t testing.TB, reg *sessions.Registry, prefix string, n, par int, cmd string) []int {
	t.Helper()
	pids := make([]int, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			pid, err := openSession(reg, fmt.Sprintf("%s%d", prefix, i), cmd)
			if err != nil {
				errs <- err
				return
			}
			pids[i] = pid
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return pids
}

func openSession(reg *sessions.Registry, name, cmd string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := reg.Attach(ctx, name, sessions.AttachOptions{Size: sessions.Size{Cols: 80, Rows: 24}, Term: "xterm"})
	if err != nil {
		return 0, fmt.Errorf("attach %s: %w", name, err)
	}
	defer c.Detach()
	// A resize, as every client that is not 80x24 makes; the marker comes
	// once the shell sees it.
	if err := c.Resize(sessions.Size{Cols: 81, Rows: 25}); err != nil {
		return 0, fmt.Errorf("resize %s: %w", name, err)
	}
	if _, err := fmt.Fprintf(c, "%s & while [ \"$(stty size)\" != \"25 81\" ]; do sleep 0.01; done; echo JOB-READY SHELL=$$ BG=$((0+$!))\n", cmd); err != nil {
		return 0, fmt.Errorf("write to %s: %w", name, err)
	}
	var out bytes.Buffer
	buf := make([]byte, 4096)
	cr := termtest.NewClientReader[sessions.Event](c)
	for ctx.Err() == nil {
		n, err := cr.Read(buf)
		out.Write(buf[:n])
		if m := shellPIDRe.FindSubmatch(out.Bytes()); m != nil {
			return strconv.Atoi(string(m[1]))
		}
		if err != nil {
			return 0, fmt.Errorf("read from %s: %w; output so far %q", name, err, out.String())
		}
	}
	return 0, fmt.Errorf("%s: no marker in %q", name, out.String())
}

// liveInSessions returns the live (not zombie) processes whose session id
// is one of sids, read from /proc the way ps does (fields after the last
// ')' of the whole stat file).
func liveInSessions(t testing.TB, sids []int) []string {
	t.Helper()
	want := make(map[int]bool, len(sids))
	for _, s := range sids {
		want[s] = true
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 4 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if sid, err := strconv.Atoi(f[3]); err == nil && want[sid] {
			cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			live = append(live, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return live
}

// threads returns this process's OS thread count.
func threads(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^Threads:\s+(\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no Threads line in /proc/self/status")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
