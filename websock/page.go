package websock

import "net/http"

// placeholder is served at / when Config.Page is nil.
const placeholder = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>termgate</title></head>
<body>
<h1>termgate</h1>
<p>This gateway was built without the browser terminal. Programs can attach
over WebSocket at <code>/api/instances/NAME/terminal</code> with an
<code>Authorization: Bearer TOKEN</code> header.</p>
</body>
</html>
`

func placeholderPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		_, _ = w.Write([]byte(placeholder))
	})
}
