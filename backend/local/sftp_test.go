package local

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// TestSFTPStartsInTheSessionsDirectory: the in-process server starts
// where the session's shell is after a cd (CwdOf), and in Config.Dir for
// a session with no shell.
func TestSFTPStartsInTheSessionsDirectory(t *testing.T) {
	home, there := t.TempDir(), t.TempDir()
	b := New(Config{Dir: home})
	inst, err := b.Lookup(context.Background(), "dev")
	if err != nil {
		t.Fatal(err)
	}
	sid := "cwd" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p, err := b.Start(context.Background(), inst, sessions.StartSpec{SessionID: sid, Shell: []string{"/bin/sh"}, Term: "xterm", Size: sessions.Size{Cols: 100, Rows: 30}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(context.Background()) })
	if _, err := p.Write([]byte("cd " + there + " && echo CD=$?.\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, p, regexp.MustCompile(`CD=0\.`))
	for _, c := range []struct{ cwdOf, want string }{{sid, there}, {"nosuch" + sid, home}} {
		conn, err := b.SFTP(context.Background(), inst, remote.SFTPOptions{CwdOf: c.cwdOf})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := sftp.NewClientPipe(conn, conn)
		if err != nil {
			t.Fatal(err)
		}
		wd, err := cl.Getwd()
		_ = cl.Close()
		_ = conn.Close()
		if err != nil || wd != c.want {
			t.Fatalf("CwdOf %q: Getwd %q (%v), want %s", c.cwdOf, wd, err, c.want)
		}
	}
}
