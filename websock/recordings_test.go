package websock

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

const (
	recWeb = "0123456789abcdef"
	recDB  = "fedcba9876543210"
)

// recordDir writes web1/recWeb.cast and db1/recDB.cast as the recorder lays
// them out (directories 0700, files 0600) and returns the directory and the
// web1 file's bytes.
func recordDir(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	web := []byte("{\"version\":2,\"width\":80,\"height\":24,\"timestamp\":1}\n[0.5,\"o\",\"caf\\u00e9 $ \"]\n")
	for inst, f := range map[string]string{"web1": recWeb, "db1": recDB} {
		if err := os.Mkdir(filepath.Join(dir, inst), 0o700); err != nil {
			t.Fatal(err)
		}
		body := web
		if inst == "db1" {
			body = []byte("{\"version\":2,\"width\":80,\"height\":24,\"timestamp\":1}\n[0.1,\"o\",\"SECRET db1\"]\n")
		}
		if err := os.WriteFile(filepath.Join(dir, inst, f+".cast"), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, web
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRecordingsRoute: GET /api/recordings/{instance}/{session} serves the
// file byte-exact to a token allowed on the instance, and the same 404 as
// an unknown instance to one that is not; without a credential 401.
func TestRecordingsRoute(t *testing.T) {
	dir, web := recordDir(t)
	var trail termtest.SyncBuffer
	e := newEnv(t, newFakeBackend("web1", "db1"), nil, func(c *Config) { c.RecordDir = dir; c.Audit = audit.New(&trail) })

	for _, tok := range []string{tokAll, tokWeb, tokRO} {
		resp := e.do("GET", "/api/recordings/web1/"+recWeb, bearerHeader(tok), nil)
		if got := body(t, resp); resp.StatusCode != http.StatusOK || got != string(web) {
			t.Fatalf("token %.4s: %d %q, want 200 and the file", tok, resp.StatusCode, got)
		}
		waitAudit(t, &trail, audit.Recording)
		if ct := resp.Header.Get("Content-Type"); ct != "application/x-asciicast" {
			t.Errorf("Content-Type %q", ct)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control %q, want no-store", cc)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("security headers missing: %v", resp.Header)
		}
	}

	// A token limited to web* learns nothing about db1: the answer for an
	// existing recording is the answer for an instance that does not exist.
	unknown := e.do("GET", "/api/recordings/db1/"+recDB, bearerHeader(tokWeb), nil)
	missing := e.do("GET", "/api/recordings/db1/"+recWeb, bearerHeader(tokWeb), nil)
	ub, mb := body(t, unknown), body(t, missing)
	if unknown.StatusCode != http.StatusNotFound || ub != mb || strings.Contains(ub, "SECRET") {
		t.Errorf("webonly on db1: %d %q, on a missing db1 recording %d %q; want the same 404", unknown.StatusCode, ub, missing.StatusCode, mb)
	}
	if msg := errorMessage(t, strings.NewReader(ub)); msg != sessions.NotFoundMessage("db1") {
		t.Errorf("webonly on db1: %q, want the unknown-instance message", msg)
	}
	resp := e.do("GET", "/api/recordings/db1/"+recDB, bearerHeader(tokAll), nil)
	if got := body(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(got, "SECRET db1") {
		t.Errorf("alice on db1: %d %q", resp.StatusCode, got)
	}
	resp = e.do("GET", "/api/recordings/web1/"+recDB, bearerHeader(tokAll), nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a recording that does not exist: %d, want 404", resp.StatusCode)
	}

	resp = e.do("GET", "/api/recordings/web1/"+recWeb, nil, nil)
	if got := body(t, resp); resp.StatusCode != http.StatusUnauthorized || strings.Contains(got, "caf") {
		t.Errorf("without a credential: %d %q, want 401", resp.StatusCode, got)
	}
	alice := e.login(tokAll)
	resp = e.do("GET", "/api/recordings/web1/"+recWeb, withCookie(alice, ""), nil)
	if got := body(t, resp); resp.StatusCode != http.StatusOK || got != string(web) {
		t.Errorf("with a login cookie: %d %q", resp.StatusCode, got)
	}
}

// TestRecordingsRouteRefusesTraversal: names that could leave the
// directory, and symbolic links planted in it (to another instance's
// recording, or an instance directory that is a link), never serve a file.
func TestRecordingsRouteRefusesTraversal(t *testing.T) {
	dir, _ := recordDir(t)
	// web2/recWeb.cast -> ../db1/recDB.cast and webx -> db1: both would let
	// a token limited to web* read db1.
	if err := os.Mkdir(filepath.Join(dir, "web2"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "db1", recDB+".cast"), filepath.Join(dir, "web2", recWeb+".cast")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("db1", filepath.Join(dir, "webx")); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, newFakeBackend("web1", "web2", "webx", "db1"), nil, func(c *Config) { c.RecordDir = dir })
	for _, path := range []string{
		"/api/recordings/web2/" + recWeb,
		"/api/recordings/webx/" + recDB,
		"/api/recordings/web1/..%2F..%2Fdb1%2F" + recDB,
		"/api/recordings/..%2Fdb1/" + recDB,
		"/api/recordings/web1/../db1/" + recDB,
		"/api/recordings/web1%2F..%2Fdb1/" + recDB,
		"/api/recordings/web1/" + strings.ToUpper(recWeb),
		"/api/recordings/web1/" + recWeb + ".cast",
		"/api/recordings/web1/" + recWeb + "%00",
		"/api/recordings/./" + recDB,
	} {
		req, err := http.NewRequest("GET", e.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokWeb)
		// Not followed: a redirect (the mux cleaning ..) is a refusal too.
		cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got := body(t, resp)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || strings.Contains(got, "SECRET") || strings.Contains(got, "version") {
			t.Errorf("%s: %d %q, want a refusal", path, resp.StatusCode, got)
		}
	}
}

// TestRecordingsRouteOff: without a recording directory the route is 404.
func TestRecordingsRouteOff(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, nil)
	resp := e.do("GET", "/api/recordings/web1/"+recWeb, bearerHeader(tokAll), nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("recordings off: %d, want 404", resp.StatusCode)
	}
}
