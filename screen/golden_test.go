package screen

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

var (
	update = flag.Bool("update", false, "rewrite testdata/*.golden from the recordings")
	record = flag.Bool("record", false, "record testdata/*.out again in the test image's busybox (needs Docker and termgate-test:busybox)")
)

// recordings are terminal sessions recorded at 80x24 in the test image's
// busybox: the keys typed, with a pause after each.
var recordings = []struct {
	name string
	keys []string
}{
	{"ls", []string{"ls --color=always -la / /bin | head -40\r"}},
	{"title", []string{"PS1=\"$(printf '\\033]0;termgate\\007\\033[1;32m')\\w$(printf '\\033[0m') \\$ \"\r", "cd /tmp\r", "echo done\r"}},
	{"vi", []string{"ls -la / > /tmp/listing\r", "vi /tmp/listing\r", "jjjjjwww", "ddp"}},
	{"top", []string{"top -d 1\r", ""}},
	{"less", []string{"ls -la /bin | less\r", " ", "j"}},
}

// TestGoldenSnapshots: the snapshot of each recorded session is the golden
// one (read them with `cat -v`), and it restores the recorded terminal's
// state in a fresh one.
func TestGoldenSnapshots(t *testing.T) {
	for _, rec := range recordings {
		t.Run(rec.name, func(t *testing.T) {
			path := filepath.Join("testdata", rec.name+".out")
			if *record {
				recordSession(t, path, rec.keys)
			}
			out, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (record with go test -run Golden -record ./screen/)", err)
			}
			term := New(80, 24, 64<<10)
			term.Write(out)
			snap := term.Snapshot()
			golden := filepath.Join("testdata", rec.name+".golden")
			if *update || *record {
				if err := os.WriteFile(golden, snap, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(snap, want) {
				t.Errorf("snapshot differs from %s (rewrite with -update after checking):\n got %q\nwant %q", golden, snap, want)
			}
			fresh := New(80, 24, 64<<10)
			fresh.Write(snap)
			if got, want := dump(fresh), dump(term); got != want {
				t.Errorf("the snapshot does not restore the recorded state\n%s", diff(want, got))
			}
			t.Logf("%s: %d bytes recorded, snapshot %d bytes, alt screen %v, title %q\n%s", rec.name, len(out), len(snap), term.AltScreen(), term.Title(), term.Text())
		})
	}
}

// recordSession runs busybox sh in the test image on a PTY and records its
// output while keys are typed.
func recordSession(t *testing.T, path string, keys []string) {
	t.Helper()
	name := fmt.Sprintf("tgscreen-record-%d", time.Now().UnixNano())
	// Killing the docker CLI leaves a TTY container running: remove it.
	defer func() { _ = exec.Command("docker", "rm", "-f", name).Run() }()
	cmd := exec.Command("docker", "run", "--rm", "-it", "--name", name, "-e", "TERM=xterm-256color", "termgate-test:busybox", "sh")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		mu.Lock()
		started := strings.Contains(out.String(), "# ")
		mu.Unlock()
		if started || time.Now().After(deadline) {
			break
		}
	}
	for _, k := range keys {
		if _, err := f.Write([]byte(k)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	_ = f.Close()
	<-done
	// Only the session's output: the docker CLI adds nothing on a TTY.
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "#") {
		t.Fatalf("no shell prompt in the recording %q", out.String())
	}
}
