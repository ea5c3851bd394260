package web_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// TestBrowserFiles (issue 21): a file dropped onto the terminal lands,
// byte for byte, in the shell's working directory after a cd there, with
// the result line in the bar naming the absolute path; two dropped at once
// go one after the other. The Download dialog asks for a path relative to
// that directory and hands the browser the GET route with session=, which
// answers the bytes with Content-Disposition; a missing file is told in the
// bar. A read-only token has no Download button, its drop uploads nothing,
// and both routes answer it 403.
func TestBrowserFiles(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	needDocker(t)
	// Transfers run the holder's SFTP server in the instance (the image
	// has no sftp-server): the one built here stands in for the embedded one.
	gw := startGatewayEnv(t, []string{"TERMGATE_HOLDER_BINARY=" + buildHolder(t)})
	name := startInstance(t, gw.label)
	b := startBrowser(t, chromium)
	base := "http://" + gw.httpAddr
	{
		ctx, cancel := b.step()
		_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny})
		cancel()
		if err != nil {
			b.fail("denying downloads: %v", err)
		}
	}

	b.do(chromedp.Navigate(base+gw.signIn), chromedp.WaitVisible(chromedp.ID("picker")))
	b.do(chromedp.Navigate(base+"/t/"+name), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.typeKeys("mkdir -p /tmp/drop.d && cd /tmp/drop.d && echo in-$((6*7))\r")
	b.waitLine("in-42")

	data := make([]byte, 3<<20+17)
	_, _ = rand.Read(data)
	b.drop(map[string][]byte{"blob.bin": data, "note.txt": []byte("hello\n")}, "blob.bin", "note.txt")
	b.waitFunc("the second upload's result", `(window.termgateFiles || {}).text === 'uploaded note.txt to /tmp/drop.d/note.txt (6 bytes)'`)
	b.shot("files-01-dropped")
	if got := dockerExec(t, name, "cat", "/tmp/drop.d/blob.bin"); !bytes.Equal(got, data) {
		t.Fatalf("the dropped file in the instance differs: %d bytes, want %d", len(got), len(data))
	}
	if max := eval[float64](b, `window.termgateProgressMax || 0`); max != 1 {
		t.Errorf("the progress bar went to %v, want to 1 (the upload's progress events)", max)
	}
	if !eval[bool](b, `document.getElementById('upload-progress').hidden`) {
		t.Error("the progress bar stays after the uploads")
	}
	if strings.Contains(b.text(), "uploaded") {
		t.Errorf("the result went into the terminal's stream:\n%s", b.text())
	}

	// Download: the dialog's path, relative to the shell's directory.
	tok := signInToken(t, gw)
	b.do(chromedp.Click(chromedp.ID("download")), chromedp.WaitVisible(chromedp.ID("download-dialog")))
	b.do(chromedp.SendKeys(chromedp.ID("download-path"), "blob.bin\r"))
	b.waitFunc("the download", `!!window.termgateDownloadURL`)
	u := eval[string](b, `window.termgateDownloadURL`)
	if q, _ := url.ParseQuery(strings.SplitN(u, "?", 2)[1]); q.Get("path") != "blob.bin" || q.Get("session") != eval[string](b, `termgate.conn.session`) {
		t.Fatalf("download URL %q: want path=blob.bin and the page's session", u)
	}
	resp := get(t, "GET", base+u, tok)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET %s: %d, %d bytes (want the %d dropped)", u, resp.StatusCode, len(body), len(data))
	}
	if _, p, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err != nil || p["filename"] != "blob.bin" {
		t.Fatalf("Content-Disposition %q (%v)", resp.Header.Get("Content-Disposition"), err)
	}
	b.do(chromedp.Click(chromedp.ID("download")), chromedp.WaitVisible(chromedp.ID("download-dialog")))
	b.do(chromedp.SendKeys(chromedp.ID("download-path"), "nosuch\r"))
	b.waitFunc("the missing file's result", `(window.termgateFiles || {}).text === 'download of nosuch failed: no file /tmp/drop.d/nosuch in instance "`+name+`"'`)
	b.shot("files-02-download")

	// Read-only: the same session watched, nothing uploaded.
	watcher := addToken(t, gw, "watcher", name+" read-only")
	b.do(chromedp.Navigate(base+"/t/"+name+"#token="+watcher), chromedp.WaitVisible(chromedp.ID("switch")))
	b.do(chromedp.Click(chromedp.ID("switch-accept")), chromedp.WaitVisible(chromedp.ID("terminal")))
	b.waitConnected()
	b.waitFunc("the read-only view", `!document.getElementById('readonly').hidden && document.getElementById('download').hidden`)
	b.drop(map[string][]byte{"ro.txt": []byte("no\n")}, "ro.txt")
	b.waitFunc("the read-only drop's note", `(window.termgateFiles || {}).text === 'read-only token: drop ignored, nothing uploaded'`)
	b.shot("files-03-readonly")
	time.Sleep(300 * time.Millisecond)
	if out := dockerExec(t, name, "ls", "-a", "/tmp/drop.d"); strings.Contains(string(out), "ro.txt") {
		t.Fatalf("a read-only drop uploaded: %s", out)
	}
	for _, m := range []string{"GET", "PUT"} {
		if resp := get(t, m, base+"/api/instances/"+name+"/files?path=note.txt", watcher); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s with a read-only token: %d, want 403", m, resp.StatusCode)
		}
	}
	b.checkConsole()
}

// drop dispatches a drop of the named files (in order) onto the terminal,
// as the browser does when files are dragged there.
func (b *browser) drop(files map[string][]byte, order ...string) {
	b.t.Helper()
	var js strings.Builder
	js.WriteString(`(() => { const dt = new DataTransfer();`)
	for _, n := range order {
		fmt.Fprintf(&js, `dt.items.add(new File([Uint8Array.from(atob(%q), (c) => c.charCodeAt(0))], %q));`, base64.StdEncoding.EncodeToString(files[n]), n)
	}
	js.WriteString(`const el = document.querySelector('#term .xterm-screen') || document.getElementById('term');
		for (const type of ['dragenter', 'dragover', 'drop']) el.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
	})()`)
	b.do(chromedp.Evaluate[chromedp.Void](js.String()))
}

// signInToken is the token of the gateway's printed browser address.
func signInToken(t *testing.T, gw *gateway) string {
	u, _ := url.Parse(gw.signIn)
	if tok := u.Query().Get("token"); tok != "" {
		return tok
	}
	return strings.TrimPrefix(u.Fragment, "token=")
}

// addToken appends a token named who with the given options ("web1
// read-only": its instances= pattern, then flags) to the gateway's token
// file and waits for the reload.
func addToken(t *testing.T, gw *gateway, who, opts string) string {
	t.Helper()
	const reloaded = `"msg":"reloaded API tokens"`
	before := strings.Count(gw.logs.String(), reloaded)
	tok := who + "-" + randomHex(16)
	inst, flags, _ := strings.Cut(opts, " ")
	f, err := os.OpenFile(filepath.Join(gw.state, "api_token"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "\n%s %s instances=%s %s\n", tok, who, inst, flags)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); strings.Count(gw.logs.String(), reloaded) == before; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not reload the token file")
		}
	}
	return tok
}

// get sends an empty-bodied request with a bearer token.
func get(t *testing.T, method, u, tok string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// dockerExec runs a command in the container and returns its stdout.
func dockerExec(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command("docker", append([]string{"exec", name}, args...)...).Output()
	if err != nil {
		t.Fatalf("docker exec %v: %v", args, err)
	}
	return out
}
