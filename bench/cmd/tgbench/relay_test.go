package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeEngine serves /_ping (what the relay's Docker client asks first) and
// /echo, which hijacks the connection and echoes it, as the engine's exec
// attach hands over a raw stream. A fake of the engine for this package's
// unit test only: TestShortBench runs the relay against the real one.
func fakeEngine(t *testing.T) (sock string, pings *atomic.Int64) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "engine.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	pings = new(atomic.Int64)
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		pings.Add(1)
		w.Header().Set("Api-Version", "1.41")
		_, _ = io.WriteString(w, "OK")
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		c, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = buf.WriteString("HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		_ = buf.Flush()
		_, _ = io.Copy(c, buf)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return sock, pings
}

// The relay process (this test binary re-executed in relay mode) carries
// the Docker client's requests and a hijacked stream both ways, and is gone
// after stop, its connections with it.
func TestRelayForwardsAndStops(t *testing.T) {
	engine, pings := fakeEngine(t)
	e := &env{cfg: &config{timeout: time.Minute}, dir: t.TempDir(), dockerHost: "unix://" + engine}
	if err := e.startRelay(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := e.relay
	defer r.stop()
	if pings.Load() == 0 {
		t.Error("the relay's Docker client did not reach the engine")
	}
	if r.pid() <= 0 {
		t.Fatalf("relay pid %d", r.pid())
	}
	c, err := net.Dial("unix", filepath.Join(e.dir, "relay.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade through the relay: %v %v", resp, err)
	}
	payload := bytes.Repeat([]byte("keystroke"), 10000)
	go func() { _, _ = c.Write(payload) }()
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(br, got); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("echo through the relay: %d bytes back, err %v", len(got), err)
	}
	exited := r.exited
	r.stop()
	select {
	case <-exited:
	default:
		t.Fatal("stop returned before the relay exited")
	}
	if n, err := br.Read(got); err == nil {
		t.Errorf("the relayed connection still works after stop (%d bytes)", n)
	}
}

func TestRelayTarget(t *testing.T) {
	for host, want := range map[string]string{
		"unix:///var/run/docker.sock": "unix /var/run/docker.sock",
		"tcp://127.0.0.1:2375":        "tcp 127.0.0.1:2375",
		"tcp://10.0.0.1:2375/base":    "tcp 10.0.0.1:2375",
	} {
		n, a, err := relayTarget(host)
		if got := n + " " + a; err != nil || got != want {
			t.Errorf("relayTarget(%s) = %q, %v; want %q", host, got, err, want)
		}
	}
	if _, _, err := relayTarget("ssh://me@host"); err == nil || !strings.Contains(err.Error(), "-relay=false") {
		t.Errorf("an ssh engine: %v, want an error that says how to leave the relay out", err)
	}
}

// The relay anchor is on by default in every phase it belongs to, and
// -relay=false leaves it out.
func TestRelayPaths(t *testing.T) {
	on, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	off, err := parseFlags([]string{"-relay=false"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	has := func(ps []string) bool {
		for _, p := range ps {
			if p == pathRelay {
				return true
			}
		}
		return false
	}
	if !has(streamPaths(on)) || !has(cpuPathsFor(on)) {
		t.Errorf("by default the relay is measured: stream %v, cpu %v", streamPaths(on), cpuPathsFor(on))
	}
	if has(streamPaths(off)) || has(cpuPathsFor(off)) || has(paths) {
		t.Errorf("-relay=false: stream %v, cpu %v, paths %v", streamPaths(off), cpuPathsFor(off), paths)
	}
}

func TestRelayFloorTable(t *testing.T) {
	r := &Report{}
	r.add("throughput", pathDirect, 20, []float64{20, 20}, "", nil)
	r.add("throughput", pathRelay, 16, []float64{16, 20}, "", nil)
	r.add("throughput", pathSSH, 12, []float64{12, 10}, "", nil)
	r.add("cpu_per_gb", pathCLI, 10, []float64{10, 10}, "", nil)
	r.add("cpu_per_gb", pathRelay, 5, []float64{5, 5}, relayCPUNote, nil)
	r.add("cpu_per_gb", pathWS, 20, []float64{20, 25}, "", nil)
	r.add("echo_p50", pathDirect, 100, nil, "", nil)
	r.add("echo_p50", pathRelay, 125, nil, "", nil)
	r.add("echo_p50", pathSSH, 150, nil, "", nil)
	r.computeRatios()
	if res := r.find("echo_p50", pathRelay); res.Ratio == nil || *res.Ratio != 1.25 {
		t.Errorf("relay echo ratio to direct %v, want 1.25", res.Ratio)
	}
	if res := r.find("cpu_per_gb", pathRelay); res.Ratio == nil || *res.Ratio != 0.5 {
		t.Errorf("relay CPU ratio %v, want 0.5 (to the docker CLI)", res.Ratio)
	}
	var out bytes.Buffer
	printTable(&out, r)
	s := out.String()
	i := strings.Index(s, "the relay floor")
	if i < 0 {
		t.Fatalf("no relay floor table:\n%s", s)
	}
	// The rows, their columns separated by single spaces.
	var rows []string
	for _, line := range strings.Split(s[i:], "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "throughput" || f[0] == "gateway" || f[0] == "keystroke") {
			rows = append(rows, strings.Join(f, " "))
		}
	}
	want := []string{
		"throughput ssh 12.0 MB/s 16.0 MB/s 0.75 0.50 / 0.62 / 0.75",
		"gateway CPU per GB websocket 20.00 s/GB 5.00 s/GB 4.00 4.00 / 4.50 / 5.00",
		"keystroke echo p50 ssh 150 us 125 us 1.20 -",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("relay floor rows:\n%s\nwant (no reference paths):\n%s\nin:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"), s[i:])
	}
}
