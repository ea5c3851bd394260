package websock

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// pipeSFTP is a remote.Runner whose SFTP server runs in this process over
// a pipe, on this host's files: the files routes' own logic under test
// (the holder's server in real instances is e2e's).
type pipeSFTP struct {
	wg sync.WaitGroup
	// cwd is each session's shell's directory (CwdOf), set before use.
	cwd map[string]string
}

type pipeConn struct{ net.Conn }

func (c pipeConn) CloseWrite() error { return c.Conn.Close() }

func (p *pipeSFTP) SFTP(ctx context.Context, _ sessions.Instance, opts remote.SFTPOptions) (remote.Conn, error) {
	a, b := net.Pipe()
	// As the real backends' streams, it ends with the context it was
	// opened under.
	context.AfterFunc(ctx, func() { _ = a.Close() })
	var o []sftp.ServerOption
	if dir, ok := p.cwd[opts.CwdOf]; ok {
		o = append(o, sftp.WithServerWorkingDirectory(dir))
	}
	srv, err := sftp.NewServer(b, o...)
	if err != nil {
		return nil, err
	}
	p.wg.Go(func() {
		_ = srv.Serve()
		_ = srv.Close()
	})
	return pipeConn{a}, nil
}

func (p *pipeSFTP) Run(context.Context, sessions.Instance, remote.Command) (remote.Process, error) {
	return nil, remote.ErrUnsupported
}

func (p *pipeSFTP) Dial(context.Context, sessions.Instance, string, int) (remote.Conn, error) {
	return nil, remote.ErrUnsupported
}

func filesEnv(t *testing.T, cfg func(*Config)) *env {
	r := &pipeSFTP{}
	t.Cleanup(r.wg.Wait)
	return newEnv(t, localBackend(), nil, func(c *Config) {
		c.Remote = r
		if cfg != nil {
			cfg(c)
		}
	})
}

func filesPath(p string) string { return "/api/instances/web1/files?path=" + p }

func TestFilesUploadAndDownloadAreByteExact(t *testing.T) {
	e := filesEnv(t, nil)
	dir := t.TempDir()
	target := filepath.Join(dir, "blob.bin")
	data := make([]byte, 5<<20+123)
	_, _ = rand.Read(data)

	resp := e.do("PUT", filesPath(target), bearerHeader(tokAll), bytes.NewReader(data))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT: %d %s", resp.StatusCode, respText(resp))
	}
	got, err := os.ReadFile(target)
	if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("the uploaded file differs (%d bytes, err %v)", len(got), err)
	}
	resp = e.do("GET", filesPath(target), bearerHeader(tokAll), nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	back, err := io.ReadAll(resp.Body)
	if err != nil || sha256.Sum256(back) != sha256.Sum256(data) {
		t.Fatalf("the downloaded file differs (%d bytes, err %v)", len(back), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("the upload left %d entries in its directory, want only the file", len(entries))
	}
}

func TestFilesReplaceKeepsModeAndNeverTruncates(t *testing.T) {
	e := filesEnv(t, func(c *Config) { c.MaxUploadSize = 64 << 10 })
	dir := t.TempDir()
	target := filepath.Join(dir, "app.conf")
	if err := os.WriteFile(target, []byte("old contents\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	// Over the limit: 413, and the old file is untouched.
	resp := e.do("PUT", filesPath(target), bearerHeader(tokAll), bytes.NewReader(make([]byte, 65<<10)))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("PUT over the limit: %d %s", resp.StatusCode, respText(resp))
	}
	// An undeclared (chunked) body over the limit: the same.
	resp = e.do("PUT", filesPath(target), bearerHeader(tokAll), io.MultiReader(strings.NewReader("x"), bytes.NewReader(make([]byte, 65<<10))))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked PUT over the limit: %d %s", resp.StatusCode, respText(resp))
	}
	if got, _ := os.ReadFile(target); string(got) != "old contents\n" {
		t.Fatalf("a refused upload changed the file: %q", got)
	}
	resp = e.do("PUT", filesPath(target), bearerHeader(tokAll), strings.NewReader("new\n"))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT: %d %s", resp.StatusCode, respText(resp))
	}
	st, err := os.Stat(target)
	if got, _ := os.ReadFile(target); err != nil || string(got) != "new\n" || st.Mode().Perm() != 0o640 {
		t.Fatalf("replaced file: %q mode %v err %v", got, st.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d entries left beside the file", len(entries))
	}
}

func TestFilesRefusals(t *testing.T) {
	e := filesEnv(t, nil)
	target := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, method, path, token string
		status                    int
	}{
		{"read-only GET", "GET", filesPath(target), tokRO, http.StatusForbidden},
		{"read-only PUT", "PUT", filesPath(target), tokRO, http.StatusForbidden},
		{"instances= GET", "GET", "/api/instances/db1/files?path=" + target, tokWeb, http.StatusNotFound},
		{"no token", "GET", filesPath(target), "", http.StatusUnauthorized},
		{"missing file", "GET", filesPath(target + ".nope"), tokAll, http.StatusNotFound},
		{"a directory", "GET", filesPath(filepath.Dir(target)), tokAll, http.StatusBadRequest},
		{"no path", "GET", "/api/instances/web1/files", tokAll, http.StatusBadRequest},
		{"bad name", "GET", "/api/instances/-x/files?path=/etc/hosts", tokAll, http.StatusBadRequest},
	} {
		h := http.Header{}
		if c.token != "" {
			h = bearerHeader(c.token)
		}
		var body io.Reader
		if c.method == "PUT" {
			body = strings.NewReader("overwritten")
		}
		resp := e.do(c.method, c.path, h, body)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.what, resp.StatusCode, respText(resp), c.status)
		}
	}
	if got, _ := os.ReadFile(target); string(got) != "secret" {
		t.Fatalf("a refused PUT wrote the file: %q", got)
	}
	off := filesEnv(t, func(c *Config) { c.Switches.NoFileTransfer = true })
	if resp := off.do("GET", filesPath(target), bearerHeader(tokAll), nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("--file-transfer=false: %d", resp.StatusCode)
	}
}

// TestFilesRelativeToTheSessionsDirectory: a relative path with session=
// is the session shell's directory's (the server starts there, CwdOf), and
// without it the server's own start directory's; PUT says where the file
// went (Content-Location, absolute), GET names it for a download.
func TestFilesRelativeToTheSessionsDirectory(t *testing.T) {
	r := &pipeSFTP{cwd: map[string]string{}}
	t.Cleanup(r.wg.Wait)
	e := newEnv(t, localBackend(), nil, func(c *Config) { c.Remote = r })
	shellDir := t.TempDir()
	sub := filepath.Join(shellDir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	r.cwd["s1"] = sub

	resp := e.do("PUT", "/api/instances/web1/files?path=../r%C3%A9sum%C3%A9+%22x%22.txt&session=s1", bearerHeader(tokAll), strings.NewReader("hello\n"))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT: %d %s", resp.StatusCode, respText(resp))
	}
	abs := filepath.Join(shellDir, `résumé "x".txt`)
	if got, err := os.ReadFile(abs); err != nil || string(got) != "hello\n" {
		t.Fatalf("the upload is not in the session's directory's parent: %q, %v", got, err)
	}
	if loc, want := resp.Header.Get("Content-Location"), "/api/instances/web1/files?path="+url.QueryEscape(abs); loc != want {
		t.Fatalf("Content-Location %q, want %q", loc, want)
	}

	resp = e.do("GET", "/api/instances/web1/files?path=../r%C3%A9sum%C3%A9+%22x%22.txt&session=s1", bearerHeader(tokAll), nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "hello\n" {
		t.Fatalf("GET: %d %q", resp.StatusCode, body)
	}
	want := `attachment; filename="r_sum_ _x_.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22x%22.txt`
	if cd := resp.Header.Get("Content-Disposition"); cd != want {
		t.Fatalf("Content-Disposition %q, want %q", cd, want)
	}
	_, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	if err != nil || params["filename"] != `résumé "x".txt` {
		t.Fatalf("Content-Disposition parses as %q, %v", params, err)
	}

	// HEAD (the page asks before it downloads): the headers, no body.
	resp = e.do("HEAD", "/api/instances/web1/files?path=../r%C3%A9sum%C3%A9+%22x%22.txt&session=s1", bearerHeader(tokAll), nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Length") != "6" {
		t.Fatalf("HEAD: %d, Content-Length %q", resp.StatusCode, resp.Header.Get("Content-Length"))
	}
	resp.Body.Close()

	// Without session=: the server's start directory (this process's).
	wd, _ := os.Getwd()
	resp = e.do("GET", "/api/instances/web1/files?path=files_test.go", bearerHeader(tokAll), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET relative without a session: %d %s", resp.StatusCode, respText(resp))
	}
	resp.Body.Close()
	if _, err := os.Stat(filepath.Join(wd, "files_test.go")); err != nil {
		t.Fatal(err)
	}
	// A session id that is not one: 400, before any SFTP.
	resp = e.do("GET", "/api/instances/web1/files?path=x&session=a/b", bearerHeader(tokAll), nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET with a bad session id: %d %s", resp.StatusCode, respText(resp))
	}
}

// TestCapWriter: a download stops at the size the file had when it
// started, whatever the reads in flight bring beyond it.
func TestCapWriter(t *testing.T) {
	var out bytes.Buffer
	c := &capWriter{w: &out, left: 5}
	if n, err := c.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("first write: %d %v", n, err)
	}
	if n, err := c.Write([]byte("defgh")); n != 2 || !errors.Is(err, errCapped) {
		t.Fatalf("write past the size: %d %v", n, err)
	}
	if out.String() != "abcde" || c.n != 5 {
		t.Fatalf("wrote %q (%d)", out.String(), c.n)
	}
}
