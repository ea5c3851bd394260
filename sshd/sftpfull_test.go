package sshd

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/sftpwire"
	"github.com/termgate/termgate/internal/termtest"
)

// TestSFTPAuditWhenTablesAreFull: issue 32 item 7 (red team round 4 L1). A
// session that holds sftpMaxTracked files open (pkg/sftp, through the
// gateway) cannot make its next files unaudited: reading a secret and
// writing a file then each still give a transfer record naming the path,
// with bytes_unknown, and the held files are recorded too.
func TestSFTPAuditWhenTablesAreFull(t *testing.T) {
	var trail termtest.SyncBuffer
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("ROOT-ONLY-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "group"), []byte("g\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFilesFixture(t, dir, func(c *Config) { c.Audit = audit.New(&trail) })
	sc := sftpClient(t, f.dial(t, "web", "web1"))
	held := make([]*sftp.File, 0, sftpMaxTracked)
	for range sftpMaxTracked {
		h, err := sc.Open("group")
		if err != nil {
			t.Fatalf("open %d: %v", len(held), err)
		}
		held = append(held, h)
	}
	r, err := sc.Open("secret")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(r); err != nil || string(b) != "ROOT-ONLY-SECRET\n" {
		t.Fatalf("read %q: %v", b, err)
	}
	_ = r.Close()
	w, err := sc.Create("unaudited-upload")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("payload")); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	for _, h := range held {
		_ = h.Close()
	}
	_ = sc.Close()
	eventually(t, "the session's transfer record", func() bool {
		return regexp.MustCompile(`"event":"transfer"[^\n]*"result":"ok","bytes_in"`).MatchString(trail.String())
	})
	for _, want := range []string{
		`"path":"secret","direction":"download","bytes_unknown":true,"result":"untracked"`,
		`"path":"unaudited-upload","direction":"upload","bytes_unknown":true,"result":"untracked"`,
	} {
		if !strings.Contains(trail.String(), want) {
			t.Errorf("no transfer record %s", want)
		}
	}
	if n := strings.Count(trail.String(), `"path":"group","direction":"download","bytes":0,"result":"ok"`); n != sftpMaxTracked {
		t.Errorf("%d records of the held files, want %d", n, sftpMaxTracked)
	}
	if t.Failed() {
		t.Logf("audit trail (last 2000 bytes):\n%s", tail(trail.String(), 2000))
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// TestSFTPWatchFullTables: the watch's two other full tables. With
// sftpMaxTracked OPENs not yet answered, the next OPEN is recorded at once
// by its path; with sftpMaxTracked READs not yet answered, a file's next
// read cannot be counted, so its record says bytes_unknown rather than a
// short count.
func TestSFTPWatchFullTables(t *testing.T) {
	var got [][]any
	w := newSFTPWatch(func(f sftpFile, complete bool) { got = append(got, f.auditDetail(complete)) })
	c, s := w.client(), w.server()
	id := uint32(0)
	next := func() uint32 { id++; return id }
	for range sftpMaxTracked {
		_, _ = c.Write(sftpPacket(byte(sftpwire.TypeOpen), next(), "/etc/group", uint32(1), uint32(0)))
	}
	_, _ = c.Write(sftpPacket(byte(sftpwire.TypeOpen), next(), "/root/secret", uint32(1), uint32(0)))
	if len(got) != 1 || !equalDetail(got[0], "path", "/root/secret", "direction", "download", "bytes_unknown", true, "result", "untracked") {
		t.Fatalf("after %d pending opens, the next open recorded %v", sftpMaxTracked, got)
	}
	// The first open is answered; its reads fill the READ table.
	got = nil
	_, _ = s.Write(sftpPacket(byte(sftpwire.TypeHandle), uint32(1), "h"))
	for range sftpMaxTracked + 1 {
		_, _ = c.Write(sftpPacket(byte(sftpwire.TypeRead), next(), "h", uint64(0), uint32(4)))
	}
	_, _ = c.Write(sftpPacket(byte(sftpwire.TypeClose), next(), "h"))
	if len(got) != 1 || !equalDetail(got[0], "path", "/etc/group", "direction", "download", "bytes_unknown", true, "result", "ok") {
		t.Fatalf("a file with an uncounted read recorded %v", got)
	}
}

func equalDetail(got []any, want ...any) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
