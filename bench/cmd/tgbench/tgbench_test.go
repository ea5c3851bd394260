package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// These tests need no Docker: the benchmark itself runs with make bench.

func TestScannerFindsMarkerAcrossChunks(t *testing.T) {
	m := []byte("TGB12END")
	stream := append(bytes.Repeat([]byte("x"), 1000), []byte("printf 'TGB%dEND\\n' 12\r\nTGB12END\r\n$ ")...)
	for size := 1; size <= len(stream); size++ {
		sc := newScanner(m)
		found := -1
		for off := 0; off < len(stream); off += size {
			end := min(off+size, len(stream))
			if sc.feed(stream[off:end]) {
				found = end
				break
			}
		}
		want := bytes.Index(stream, m) + len(m)
		if found < want || found > want+size-1 {
			t.Fatalf("chunk size %d: marker reported at %d, want the chunk that ends it (%d)", size, found, want)
		}
	}
}

func TestScannerIgnoresEchoedCommand(t *testing.T) {
	m, printf := marker("END")
	sc := newScanner(m)
	if sc.feed([]byte("head -c 10 /dev/zero | tr '\\0' x; " + printf + "\r\n")) {
		t.Fatalf("the echoed command %q matched its own marker %q", printf, m)
	}
	if !sc.feed(append(bytes.Repeat([]byte("x"), 10), m...)) {
		t.Fatal("marker not found")
	}
}

func TestMarkersAreUnique(t *testing.T) {
	a, _ := marker("END")
	b, _ := marker("END")
	if bytes.Equal(a, b) || bytes.Contains(b, a) {
		t.Fatalf("markers %q and %q collide", a, b)
	}
}

func TestStats(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if got := median(xs); got != 3 {
		t.Errorf("median = %v, want 3", got)
	}
	if got := median([]float64{4, 1, 2, 3}); got != 2.5 {
		t.Errorf("median of four = %v, want 2.5", got)
	}
	var hundred []float64
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, float64(i))
	}
	for _, c := range []struct{ p, want float64 }{{50, 50}, {99, 99}, {100, 100}, {0, 1}} {
		if got := percentile(hundred, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if xs[0] != 5 {
		t.Error("median sorted its argument in place")
	}
	if median(nil) != 0 || percentile(nil, 50) != 0 || mean(nil) != 0 {
		t.Error("empty samples should give 0")
	}
}

func TestRotate(t *testing.T) {
	got := strings.Join(rotate(paths, 4), ",")
	if want := "ssh,websocket,direct"; got != want {
		t.Errorf("rotate = %s, want %s", got, want)
	}
}

func TestRatiosAndTable(t *testing.T) {
	r := &Report{}
	r.add("throughput", pathDirect, 100, nil, "", nil)
	r.add("throughput", pathSSH, 80, nil, "", nil)
	r.add("attach", pathDirect, 30, nil, "", nil)
	r.add("attach_new", pathWS, 45, nil, "", nil)
	r.add("fanout_client", "4 clients", 50, nil, "", nil)
	r.fail("echo_p50", pathSSH, io.ErrUnexpectedEOF)
	r.computeRatios()
	for _, c := range []struct {
		metric, path string
		want         float64
	}{{"throughput", pathSSH, 0.8}, {"attach_new", pathWS, 1.5}, {"fanout_client", "4 clients", 0.5}} {
		res := r.find(c.metric, c.path)
		if res == nil || res.Ratio == nil || *res.Ratio != c.want {
			t.Errorf("%s %s: ratio %v, want %v", c.metric, c.path, res, c.want)
		}
	}
	if len(r.Errors) != 1 {
		t.Errorf("errors = %q, want the echo failure", r.Errors)
	}
	var out bytes.Buffer
	printTable(&out, r)
	for _, want := range []string{"throughput", "80.0 MB/s", "100.0 MB/s", "0.80", "failed (below)", "error: echo_p50 ssh: unexpected EOF"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// With one client alone on the session measured, the fan-out metrics are
// its fraction (target: the slowest of 100 at least 0.8 of it).
func TestFanoutComparesWithLoneClient(t *testing.T) {
	r := &Report{}
	r.add("throughput", pathDirect, 100, nil, "", nil)
	r.add("fanout_lone", "100 clients", 40, nil, "", nil)
	r.add("fanout_slowest", "100 clients", 30, nil, "", nil)
	r.add("scale_mem", "1000 ssh clients", 12, nil, "", nil)
	r.computeRatios()
	for _, c := range []struct {
		metric string
		want   float64
	}{{"fanout_lone", 0.4}, {"fanout_slowest", 0.75}} {
		res := r.find(c.metric, "100 clients")
		if res == nil || res.Ratio == nil || *res.Ratio != c.want {
			t.Errorf("%s: ratio %v, want %v", c.metric, res, c.want)
		}
	}
	if res := r.find("scale_mem", "1000 ssh clients"); res == nil || res.Ratio != nil {
		t.Errorf("scale_mem has no reference, got %+v", res)
	}
	var out bytes.Buffer
	printTable(&out, r)
	if !strings.Contains(out.String(), "scale, gateway RSS per client") {
		t.Errorf("table lacks the scale row:\n%s", out.String())
	}
}

// Enough client keys for the gateway's per-key caps (20 connections).
func TestKeysFor(t *testing.T) {
	for _, c := range []struct{ fanout, scale, want int }{{4, 0, 2}, {100, 0, 8}, {4, 1000, 64}} {
		if got := keysFor(&config{fanout: c.fanout, scale: c.scale}); got != c.want {
			t.Errorf("keysFor(fanout %d, scale %d) = %d, want %d", c.fanout, c.scale, got, c.want)
		}
		n := max(c.fanout, c.scale)
		if (n+perKey-1)/perKey >= keysFor(&config{fanout: c.fanout, scale: c.scale}) || perKey >= 20 {
			t.Errorf("%d clients: more than 20 on one key", n)
		}
	}
}

func TestFlags(t *testing.T) {
	c, err := parseFlags([]string{"-termgate", "x/termgate", "-gateway-arg=--buffer-size=1MiB", "-gateway-arg", "--log-level=debug"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.termgate != "x/termgate" || len(c.gatewayArgs) != 2 || c.bytes != 32_000_000 {
		t.Errorf("parsed %+v", c)
	}
	for _, bad := range [][]string{{"-runs", "0"}, {"-bytes", "10"}, {"-fanout", "-1"}, {"-fanout", "121"}, {"-scale-clients", "-1"}, {"-scale-clients", "5001"}, {"stray"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (term gate) (x)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 9 0 100 0 0"
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3250*time.Millisecond {
		t.Errorf("utime+stime = %v, want 3.25s (325 ticks)", got)
	}
	if _, err := parseStatCPU("4242 (x) S 1"); err == nil {
		t.Error("a short stat line was accepted")
	}
}

func TestSSHDConfigForcesTheDockerExec(t *testing.T) {
	conf := sshdConfig("/tmp/st", "127.0.0.1:2222", "root", "tgbench-x-a", "unix:///run/d.sock")
	for _, want := range []string{"Port 2222\n", "ListenAddress 127.0.0.1\n", "HostKey /tmp/st/openssh_host_key\n",
		"AuthorizedKeysFile /tmp/st/authorized_keys\n", "UsePAM no\n", "PasswordAuthentication no\n",
		"ForceCommand exec docker exec -it -e TERM=xterm-256color tgbench-x-a /bin/sh\n", "SetEnv DOCKER_HOST=unix:///run/d.sock\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("sshd_config lacks %q:\n%s", want, conf)
		}
	}
}

func TestPairedRatiosAndCPUReference(t *testing.T) {
	r := &Report{}
	r.add("throughput", pathDirect, 20, []float64{10, 20, 40}, "", nil)
	r.add("throughput", pathSSH, 18, []float64{9, 18, 20}, "", nil)
	r.add("cpu_per_gb", pathCLI, 12, []float64{12, 12, 12}, "", nil)
	r.add("cpu_per_gb", pathWS, 18, []float64{24, 18, 12}, "", nil)
	r.computeRatios()
	if got := r.find("throughput", pathSSH).Paired; !slices.Equal(got, []float64{0.9, 0.9, 0.5}) {
		t.Errorf("paired throughput ratios = %v, want [0.9 0.9 0.5]", got)
	}
	ws := r.find("cpu_per_gb", pathWS)
	if ws.Ratio == nil || *ws.Ratio != 1.5 || !slices.Equal(ws.Paired, []float64{2, 1.5, 1}) {
		t.Errorf("cpu ratio %v paired %v, want 1.5 against the docker CLI and [2 1.5 1]", ws.Ratio, ws.Paired)
	}
	if ws.Min != 12 || ws.Max != 24 {
		t.Errorf("min..max = %v..%v, want 12..24", ws.Min, ws.Max)
	}
	var out bytes.Buffer
	printTable(&out, r)
	for _, want := range []string{"gateway CPU per GB", "docker exec -t", "12.00 s/GB..24.00 s/GB", "1.00 / 1.50 / 2.00", "0.50 / 0.90 / 0.90"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPromptEnd(t *testing.T) {
	for in, want := range map[string]bool{
		"/ # ":                       true,
		"~ $ ":                       true,
		"\x1b[H\x1b[2J/ #\x1b[1;5H":  true, // a snapshot of a fresh shell
		"/ #\r\n\r\n\x1b[m\x1b[6;5H": true, // the same on a taller screen
		"\x1b[?1049l\x1b[!p\x1b[m\x1b[r\x1b[?6l\x1b[?7h\x1b[H\x1b[2J": false, // a snapshot of an empty screen
		"": false,
	} {
		if got := promptEnd([]byte(in)); got != want {
			t.Errorf("promptEnd(%q) = %v, want %v", in, got, want)
		}
	}
}
