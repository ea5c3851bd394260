package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// withAssets replaces the embedded assets for one test: the handler's
// behaviour must not depend on whether `make build` ran before `go test`.
func withAssets(t *testing.T, a map[string]asset) {
	t.Helper()
	saved := assets
	assets = a
	t.Cleanup(func() { assets = saved })
}

func get(t *testing.T, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, r)
	return w
}

func fakeAssets() map[string]asset {
	return map[string]asset{
		"app.js":  {data: []byte("console.log(1)"), ctype: "text/javascript; charset=utf-8", etag: `"js1"`},
		"app.css": {data: []byte("body{}"), ctype: "text/css; charset=utf-8", etag: `"css1"`},
	}
}

func TestPageAddresses(t *testing.T) {
	withAssets(t, fakeAssets())
	for _, path := range []string{"/", "/t/web1", "/t/a.b_c-d", "/?token=x", "/t/web1+build", "/t/web1%2Bbuild", "/t/web1+a_b-9?login=app"} {
		w := get(t, path)
		if w.Code != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", path, w.Code)
			continue
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		body := w.Body.String()
		if !strings.Contains(body, `src="/assets/app.js"`) || !strings.Contains(body, `href="/assets/app.css"`) {
			t.Errorf("GET %s: the page does not load the bundle:\n%s", path, body)
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, "onclick=") {
			t.Errorf("GET %s: inline script in the page", path)
		}
		csp := w.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, want)
			}
		}
		if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, cc)
		}
	}
	for _, path := range []string{"/t/", "/t/-web", "/t/a/b", "/t/bad%20name", "/t/web1+", "/t/web1+Build", "/t/web1+b.c", "/t/web1+a+b", "/t/web1+" + strings.Repeat("a", 33), "/index.html", "/favicon.ico", "/assets/", "/assets/other.js"} {
		if w := get(t, path); w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, w.Code)
		}
	}
}

func TestAssets(t *testing.T) {
	withAssets(t, fakeAssets())
	w := get(t, "/assets/app.js")
	if w.Code != http.StatusOK || w.Body.String() != "console.log(1)" {
		t.Fatalf("GET /assets/app.js: %d %q", w.Code, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if et := w.Header().Get("ETag"); et != `"js1"` {
		t.Errorf("ETag %q", et)
	}
	if cc := w.Header().Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control %q, want no-cache (revalidate)", cc)
	}
	if w := get(t, "/assets/app.css", "If-None-Match", `"css1"`); w.Code != http.StatusNotModified {
		t.Errorf("GET /assets/app.css with its ETag: %d, want 304", w.Code)
	}
}

func TestUnbuilt(t *testing.T) {
	withAssets(t, nil)
	if Built() {
		t.Fatal("Built() with no assets")
	}
	w := get(t, "/t/web1")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "make build") {
		t.Errorf("GET /t/web1 without assets: %d, want the page saying how to build them:\n%s", w.Code, w.Body.String())
	}
	if w := get(t, "/assets/app.js"); w.Code != http.StatusNotFound {
		t.Errorf("GET /assets/app.js without assets: %d, want 404", w.Code)
	}
}

// TestEmbedded checks what this build carries: both assets or neither.
func TestEmbedded(t *testing.T) {
	if !Built() {
		t.Skip("assets not bundled (run make build)")
	}
	for _, name := range []string{"app.js", "app.css"} {
		if len(assets[name].data) == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	if !strings.Contains(string(assets["app.css"].data), ".xterm") {
		t.Error("app.css lacks xterm's stylesheet")
	}
}
