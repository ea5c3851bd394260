// Package web is termgate's browser terminal: a page (sign-in form, session
// list, and a full-window xterm.js terminal at /t/NAME, with a tab per
// session of the instance, /t/NAME+SESSION) served from the
// binary. Its JavaScript and CSS are bundled from src/ into dist/ by
// `make build` (npm ci, then node build.mjs); a binary built without that
// step serves a page that says how to bundle them.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"regexp"
	"time"

	"github.com/termgate/termgate/internal/names"
)

//go:embed src/index.html
var indexHTML []byte

//go:embed dist
var dist embed.FS

// asset is one bundled file.
type asset struct {
	data  []byte
	ctype string
	etag  string
}

var assets = loadAssets()

func loadAssets() map[string]asset {
	out := map[string]asset{}
	for name, ctype := range map[string]string{
		"app.js":  "text/javascript; charset=utf-8",
		"app.css": "text/css; charset=utf-8",
	} {
		b, err := fs.ReadFile(dist, "dist/"+name)
		if err != nil {
			return nil // not bundled: every asset or none
		}
		sum := sha256.Sum256(b)
		out[name] = asset{data: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	}
	return out
}

// Built reports whether the binary carries the bundled assets.
func Built() bool { return assets != nil }

// csp allows only this origin's script, styles and WebSocket. Styles need
// 'unsafe-inline' because xterm.js styles its DOM renderer with a <style>
// element it creates; scripts are never inline.
const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"connect-src 'self'; img-src 'self' data:; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// pagePath matches the page's addresses: /, /t/NAME (the instance's
// default session) and /t/NAME+SESSION (its named session SESSION), so
// that a session's tab can be bookmarked.
var pagePath = regexp.MustCompile(`^/(t/` + names.Expr + `(\+` + names.SessionExpr + `)?)?$`)

// Handler serves the page at /, /t/NAME and /t/NAME+SESSION, and the
// assets at /assets/.
// It needs no authentication: the page holds no data and signs in through
// the API.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /assets/{file}", serveAsset)
	mux.HandleFunc("GET /", servePage)
	return mux
}

func servePage(w http.ResponseWriter, r *http.Request) {
	if !pagePath.MatchString(r.URL.Path) {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store") // the address may carry ?token=
	h.Set("Content-Type", "text/html; charset=utf-8")
	if !Built() {
		_, _ = w.Write([]byte(unbuilt))
		return
	}
	http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(indexHTML))
}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := assets[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "no-cache") // revalidate: one binary's assets replace another's at the same address
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.data))
}

// unbuilt is the page of a binary built without the bundled assets.
const unbuilt = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>termgate</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>termgate</h1>
<p>This binary was built without the browser terminal's assets.
Build them with <code>make build</code> in a clone of termgate (it runs
<code>npm ci</code> and bundles <code>web/src</code> into <code>web/dist</code>;
Node.js and npm are needed), then restart the gateway.</p>
<p>SSH and the WebSocket API work without them: programs attach at
<code>/api/instances/NAME/terminal</code> with an
<code>Authorization: Bearer TOKEN</code> header.</p>
</body>
</html>
`
