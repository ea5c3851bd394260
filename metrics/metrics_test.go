package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

type fixed []sessions.Info

func (f fixed) Sessions() []sessions.Info { return f }

func TestHandlerReportsSessions(t *testing.T) {
	// Two sessions of web1 (the default one and a named one) are two
	// series, not a duplicate that would fail the whole scrape.
	h := Handler(fixed{{Instance: "web1", Clients: 2, BytesOut: 1234}, {Instance: "db", Clients: 0}, {Instance: "web1", Name: "build", Clients: 1, BytesOut: 7}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		"termgate_sessions 3",
		"termgate_sessions_idle 1",
		`termgate_clients{instance="web1",name=""} 2`,
		`termgate_session_output_bytes{instance="web1",name=""} 1234`,
		`termgate_clients{instance="web1",name="build"} 1`,
		`termgate_session_output_bytes{instance="web1",name="build"} 7`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
