package termtest

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/creack/pty"
)

// AsciinemaPlay plays a recording with Debian's asciinema as a user does
// (`asciinema play`, on a terminal, hence the PTY; idle gaps capped at
// 0.1 s) and returns what it printed: the output events. It reports false
// when asciinema is not installed, and fails the test then when
// TERMGATE_REQUIRE_ASCIINEMA=1.
func AsciinemaPlay(t testing.TB, path string) (string, bool) {
	t.Helper()
	bin, err := exec.LookPath("asciinema")
	if err != nil {
		if os.Getenv("TERMGATE_REQUIRE_ASCIINEMA") == "1" {
			t.Fatal("asciinema is not installed (apt-get install asciinema) and TERMGATE_REQUIRE_ASCIINEMA=1")
		}
		t.Log("asciinema not installed: the recording was checked with encoding/json only")
		return "", false
	}
	cmd := exec.Command(bin, "play", "-i", "0.1", path)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // asciinema writes its config there
	f, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { defer close(copied); _, _ = io.Copy(&out, f) }() // ends with EIO once the child is gone
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		err = <-waited
		t.Errorf("asciinema play %s did not finish in 30s", path)
	}
	<-copied
	if err != nil {
		t.Fatalf("asciinema play %s: %v\n%s", path, err, out.String())
	}
	return out.String(), true
}
