package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestForwardCollector(t *testing.T) {
	h := Handler(fixed{}, ForwardCollector(func() ForwardStats {
		return ForwardStats{Opened: 3, Refused: 2, Failed: 1, BytesToTarget: 100, BytesFromTarget: 200}
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`termgate_forwards_total{result="ok"} 3`,
		`termgate_forwards_total{result="denied"} 2`,
		`termgate_forwards_total{result="failed"} 1`,
		`termgate_forward_bytes_total{direction="to_target"} 100`,
		`termgate_forward_bytes_total{direction="from_target"} 200`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %q in:\n%s", want, body)
		}
	}
}
