package websock

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestKeepRoute: POST /api/instances/NAME/keep?for=D postpones reaping;
// /api/sessions says when the session will be reaped.
func TestKeepRoute(t *testing.T) {
	e := newEnv(t, localBackend(), nil, nil)
	w, _ := e.attach("/api/instances/web1/terminal?cols=80&rows=24")
	for _, tc := range []struct {
		tok, q string
		status int
	}{
		{tokRO, "web1/keep?for=1h", http.StatusForbidden},
		{tokAll, "web1/keep?for=48h", http.StatusBadRequest},
		{tokAll, "web1/keep?for=soon", http.StatusBadRequest},
		{tokAll, "web2/keep?for=1h", http.StatusNotFound},
		{tokWeb, "db1/keep?for=1h", http.StatusNotFound},
	} {
		if resp := e.do(http.MethodPost, "/api/instances/"+tc.q, bearerHeader(tc.tok), nil); resp.StatusCode != tc.status {
			t.Errorf("POST %s: %d %s, want %d", tc.q, resp.StatusCode, respText(resp), tc.status)
		}
	}
	resp := e.do(http.MethodPost, "/api/instances/web1/keep?for=8h", bearerHeader(tokAll), nil)
	var kept struct {
		KeepUntil time.Time `json:"keep_until"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&kept) != nil || time.Until(kept.KeepUntil) < 7*time.Hour {
		t.Fatalf("keep: %d, keep_until %v", resp.StatusCode, kept.KeepUntil)
	}
	w.hangUp()
	e.waitClients("web1", 0)
	var list []struct {
		ReapAt    *time.Time `json:"reap_at"`
		KeepUntil *time.Time `json:"keep_until"`
	}
	// reap_at is published once the session counts as idle, just after
	// its last client left.
	for deadline := time.Now().Add(waitFor); ; time.Sleep(20 * time.Millisecond) {
		resp = e.do(http.MethodGet, "/api/sessions", bearerHeader(tokAll), nil)
		err := json.NewDecoder(resp.Body).Decode(&list)
		if err == nil && len(list) == 1 && list[0].ReapAt != nil && list[0].ReapAt.Equal(kept.KeepUntil) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/sessions after the keep: %+v, %v", list, err)
		}
	}
}
