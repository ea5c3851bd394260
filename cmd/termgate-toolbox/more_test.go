package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0050":                         "0.0.0.0:80",
		"00000000000000000000000001000000:0016": "[::1]:22",
	} {
		if got, err := procAddr(in); err != nil || got != want {
			t.Errorf("procAddr(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := procAddr("zz:1"); err == nil {
		t.Error("procAddr took a bad address")
	}
}

func TestSizeStr(t *testing.T) {
	for _, c := range []struct {
		n     uint64
		human bool
		want  string
	}{{1, false, "1"}, {2048, false, "2"}, {512, true, "512B"}, {1536, true, "1.5K"}, {50 << 20, true, "50M"}} {
		if got := sizeStr(c.n, c.human); got != c.want {
			t.Errorf("sizeStr(%d, %v) = %q, want %q", c.n, c.human, got, c.want)
		}
	}
}

// TestFetchAndSockets: wget and curl reach a local HTTP server (as they
// reach the service on the instance's loopback), a 404 is status 8; the
// server's socket is among netstat -l's; hexdump prints the canonical form.
func TestFetchAndSockets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("hello from the service\n"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	if out, errs, code := sh(t, dir, "wget -q -O - "+srv.URL+"/ok"); code != 0 || out != "hello from the service\n" {
		t.Errorf("wget: %q %q %d", out, errs, code)
	}
	if out, _, code := sh(t, dir, "wget -q "+srv.URL+"/ok && cat ok"); code != 0 || out != "hello from the service\n" {
		t.Errorf("wget to a file: %q %d", out, code)
	}
	if _, errs, code := sh(t, dir, "curl "+strings.TrimPrefix(srv.URL, "http://")+"/missing"); code != 8 || !strings.Contains(errs, "404") {
		t.Errorf("curl of a 404: %q %d", errs, code)
	}
	if _, errs, code := sh(t, dir, "wget https://example.com/"); code != 1 || !strings.Contains(errs, "only http://") {
		t.Errorf("wget https: %q %d", errs, code)
	}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	if out, _, _ := sh(t, dir, "netstat -tln"); !strings.Contains(out, "127.0.0.1:"+port+" ") {
		t.Errorf("netstat -tln lacks the server's 127.0.0.1:%s:\n%s", port, out)
	}
	if out, _, code := sh(t, dir, "printf 'hi' | hexdump -C"); code != 0 || !strings.HasPrefix(out, "00000000  68 69") || !strings.Contains(out, "|hi|") {
		t.Errorf("hexdump: %q", out)
	}
	if out, _, code := sh(t, dir, "mkdir -p a/b && du -s a && df / | head -1"); code != 0 || !strings.Contains(out, "\ta\n") || !strings.Contains(out, "Mounted on") {
		t.Errorf("du/df: %q", out)
	}
}
