package websock

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/termtest"
)

// TestCutUploadLeavesNoPartialFile is the round-4 red team's L2: a PUT
// whose client goes away mid-body (a Content-Length it never sends, then
// a close) leaves the target untouched and no hidden partial file beside
// it, although the request's own SFTP stream ended with the request.
func TestCutUploadLeavesNoPartialFile(t *testing.T) {
	var buf termtest.SyncBuffer
	e := filesEnv(t, func(c *Config) { c.Audit = audit.New(&buf) })
	dir := t.TempDir()
	target := filepath.Join(dir, "app.conf")
	if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, length := range []string{"Content-Length: 1000\r\n", "Transfer-Encoding: chunked\r\n"} {
		c, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		body := "PARTIAL123"
		if strings.HasPrefix(length, "Transfer") {
			body = fmt.Sprintf("%x\r\n%s\r\n", len(body), body)
		}
		_, err = fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\n%s", filesPath(target), tokAll, length, body)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		// The failed transfer's record comes after the cleanup.
		waitAudit(t, &buf, audit.Transfer)
		buf.Reset()
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, de := range ents {
			names = append(names, de.Name())
		}
		if len(names) != 1 || names[0] != "app.conf" {
			t.Fatalf("%sthe directory holds %q, want only app.conf", length, names)
		}
		if b, _ := os.ReadFile(target); string(b) != "old\n" {
			t.Fatalf("the target was changed to %q", b)
		}
	}
}
