package docker

import (
	"strings"
	"testing"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/remote"
)

// TestRefusedHolderDirLeavesNoUpload: issue 32 item 7 (red team round 4
// L3). The instance's uid-1000 user plants /tmp/.termgate as a symlink and
// owns /var/tmp/.termgate. Each gateway start (a durable session) and each
// tool (an SFTP) uploads the holder there, is refused, and goes on to /run;
// the refused uploads' directories are gone, not a copy of the holder per
// refused directory per start.
func TestRefusedHolderDirLeavesNoUpload(t *testing.T) {
	_, name := ordinaryContainer(t)
	asUser(t, name, "ln -s /home/u /tmp/.termgate && mkdir -m 700 /var/tmp/.termgate")
	for run := range 2 { // a gateway, then its restart: both try /tmp and /var/tmp first
		b, logs := durableBackend(t, Config{})
		inst := lookup(t, b, name)
		tm, h := startHeld(t, b, inst)
		if d := h.(interface{ Dir() string }).Dir(); d == "/tmp" || d == "/var/tmp" {
			t.Fatalf("run %d: the session is held in the refused %s/.termgate", run, d)
		}
		if n := strings.Count(logs.String(), "refused a holder directory"); n != 2 {
			t.Fatalf("run %d: %d refused directories in the log, want 2 (/tmp, /var/tmp):\n%s", run, n, logs)
		}
		release(t, tm, h)

		// A tool on a gateway that has not learnt where the holder runs.
		tb := plainBackend(t)
		conn, err := tb.SFTP(testContext(t), lookup(t, tb, name), remote.SFTPOptions{})
		if err != nil {
			t.Fatalf("run %d: SFTP: %v", run, err)
		}
		c, err := sftp.NewClientPipe(conn, conn)
		if err != nil {
			t.Fatalf("run %d: sftp client: %v", run, err)
		}
		if _, err := c.Getwd(); err != nil {
			t.Fatalf("run %d: sftp: %v", run, err)
		}
		_ = c.Close()
		_ = conn.Close()

		if out, _ := dockerExec(name, "ls -a /tmp /var/tmp | grep '^.termgate-upload-'"); out != "" {
			t.Fatalf("run %d: upload directories left:\n%s", run, out)
		}
	}
	// The planted link and the user's directory are left as they were.
	if out, ok := dockerExec(name, "readlink /tmp/.termgate && stat -c %u /var/tmp/.termgate"); !ok || out != "/home/u\n1000" {
		t.Errorf("the user's /tmp/.termgate and /var/tmp/.termgate changed: %q", out)
	}
}
