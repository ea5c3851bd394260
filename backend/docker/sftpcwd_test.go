package docker

import (
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// TestSFTPStartsInTheSessionsDirectory: SFTP with CwdOf starts in the
// working directory of that session's shell, where it is after a cd, for
// an ordinary shell (marked GATEWAY.SESSION) and a held one (marked
// SESSION, below the holder); a session with no shell leaves it at home.
func TestSFTPStartsInTheSessionsDirectory(t *testing.T) {
	needEngine(t)
	t.Parallel()
	for _, durable := range []bool{false, true} {
		name, _ := runContainer(t, "--label", runLabel)
		var b *Backend
		if durable {
			b, _ = durableBackend(t, Config{Label: runLabel})
		} else {
			b = plainBackend(t)
		}
		tm, inst, sid := startShell(t, b, name, sessions.DefaultSize)
		tm.write(t, "cd /tmp && mkdir -p in.d && cd in.d && echo CD=$?.\n")
		tm.expect(t, `CD=0\.`, 10*time.Second)
		for _, c := range []struct{ cwdOf, want string }{{sid, "/tmp/in.d"}, {"nosuch" + sid, "/root"}} {
			conn, err := b.SFTP(testContext(t), inst, remote.SFTPOptions{CwdOf: c.cwdOf})
			if err != nil {
				t.Fatalf("durable %v: SFTP: %v", durable, err)
			}
			cl, err := sftp.NewClientPipe(conn, conn)
			if err != nil {
				t.Fatal(err)
			}
			wd, err := cl.Getwd()
			if err == nil && c.want == "/tmp/in.d" {
				var f *sftp.File
				if f, err = cl.Create("here.txt"); err == nil {
					_, _ = f.Write([]byte("x"))
					err = f.Close()
				}
			}
			_ = cl.Close()
			_ = conn.Close()
			if err != nil || wd != c.want {
				t.Fatalf("durable %v, CwdOf %q: Getwd %q (%v), want %s", durable, c.cwdOf, wd, err, c.want)
			}
		}
		tm.write(t, "cat here.txt; echo .END\n")
		tm.expect(t, `x\.END`, 10*time.Second)
		if out := dockerCLI(t, "exec", name, "cat", "/tmp/in.d/here.txt"); strings.TrimSpace(out) != "x" {
			t.Fatalf("durable %v: the file in the shell's directory: %q", durable, out)
		}
	}
}
