package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/termgate/termgate/audit"
)

// TestAuditCollector: what the audit trail records for commands and
// transfers (as sshd and websock write it) is what /metrics counts.
func TestAuditCollector(t *testing.T) {
	log := audit.New(io.Discard)
	who := audit.Who{Via: "ssh", Name: "alice"}
	log.Event(audit.Command, who, "web1", "", "argv", "true", "result", "ok", "exit_code", 0)
	log.Event(audit.Command, who, "web1", "", "argv", "rm", "result", "denied", "reason", "read-only key")
	log.Event(audit.Transfer, who, "web1", "", "path", "/a", "direction", "upload", "bytes", int64(5), "result", "ok")
	log.Event(audit.Transfer, who, "web1", "", "path", "/b", "direction", "upload", "bytes", 7, "result", "ok")
	log.Event(audit.Transfer, who, "web1", "", "path", "/c", "direction", "download", "bytes", int64(11), "result", "failed")
	log.Event(audit.Transfer, who, "web1", "", "result", "ok", "bytes_in", 12, "bytes_out", 11) // an SFTP session ends
	log.Event(audit.Attach, who, "web1", "s1")                                                  // not counted here

	h := Handler(fixed{}, AuditCollector(log.Counts))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`termgate_commands_total{result="ok"} 1`,
		`termgate_commands_total{result="denied"} 1`,
		`termgate_commands_total{result="failed"} 0`,
		`termgate_transfers_total{direction="upload",result="ok"} 2`,
		`termgate_transfers_total{direction="download",result="failed"} 1`,
		`termgate_transfers_total{direction="download",result="ok"} 0`,
		`termgate_transfers_total{direction="session",result="ok"} 1`,
		`termgate_transfer_bytes_total{direction="upload"} 12`,
		`termgate_transfer_bytes_total{direction="download"} 11`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %q in:\n%s", want, body)
		}
	}
}
