package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParsePace(t *testing.T) {
	for in, want := range map[string]int{"400KB": 400_000, "2MB": 2_000_000, "2 MB/s": 2_000_000, "1.5M": 1_500_000, "50000": 50_000, "0": 0} {
		got, err := parsePace(in)
		if err != nil || got != want {
			t.Errorf("parsePace(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "10", "100MB", "-1KB"} {
		if _, err := parsePace(bad); err == nil {
			t.Errorf("parsePace(%q) accepted", bad)
		}
	}
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.pace != 400_000 || c.paceFor != 5*time.Second {
		t.Errorf("default pace %d for %s (%v), want 400 KB/s for 5s", c.pace, c.paceFor, err)
	}
	for _, bad := range [][]string{{"-fanout-pace", "fast"}, {"-fanout-pace-for", "100ms"}, {"-fanout-pace-for", "2m"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := formatPace(400_000) + " " + formatPace(2_000_000) + " " + formatPace(1234); got != "400 KB 2 MB 1234 B" {
		t.Errorf("formatPace: %s", got)
	}
}

// The command prints pace/100 bytes per 10 ms tick for the whole run,
// between two markers that ts stamps.
func TestPacedCommand(t *testing.T) {
	line, start, end, printed := pacedCommand(&config{pace: 400_000, paceFor: 5 * time.Second})
	if printed != 2_000_000 {
		t.Errorf("printed %d, want 2000000", printed)
	}
	for _, want := range []string{"head -c 4000 ", "-lt 500 ", "| ts %.s", "read -t 0.0$d"} {
		if !strings.Contains(line, want) {
			t.Errorf("command lacks %q: %s", want, line)
		}
	}
	// The echo of the command line must not contain the markers.
	if bytes.Contains([]byte(line), start) || bytes.Contains([]byte(line), end) {
		t.Errorf("the command line contains its own markers: %s", line)
	}
}

// The reader finds each stamped marker wherever the reads split it, counts
// the bytes up to it, and reads the stamp in front of it.
func TestStampReader(t *testing.T) {
	stream := "prompt# cmd\r\nxx1796067238.950767 TGB7PS\r\n" + strings.Repeat("x", 100_000) + "1796067243.000001 TGB8PE\r\n# "
	for _, chunk := range []int{1, 3, 7, 30, 4096, 1 << 20} {
		a, b := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for s := stream; len(s) > 0; {
				n := min(chunk, len(s))
				if _, err := b.Write([]byte(s[:n])); err != nil {
					return
				}
				s = s[n:]
			}
		}()
		s := newShell(context.Background(), a, pathSSH)
		r := &stampReader{s: s}
		st, _, err := r.find([]byte("TGB7PS"))
		if err != nil {
			t.Fatalf("chunk %d: start: %v", chunk, err)
		}
		n, en, _, err := r.findStamped([]byte("TGB8PE"))
		if err != nil {
			t.Fatalf("chunk %d: end: %v", chunk, err)
		}
		if want := time.Unix(1796067238, 950767000); !st.Equal(want) {
			t.Errorf("chunk %d: start stamp %v, want %v", chunk, st, want)
		}
		if want := time.Unix(1796067243, 1000); !en.Equal(want) {
			t.Errorf("chunk %d: end stamp %v, want %v", chunk, en, want)
		}
		if want := int64(len("\r\n") + 100_000 + len("1796067243.000001 TGB8PE")); n != want {
			t.Errorf("chunk %d: %d bytes up to the end marker, want %d", chunk, n, want)
		}
		s.Close()
		b.Close()
		<-done
	}
}

func TestParseStampNeedsOne(t *testing.T) {
	for _, bad := range []string{"xxxx ", "", "12:00 ", "x.y "} {
		if _, err := parseStamp([]byte(bad), []byte("TGB1PE")); err == nil {
			t.Errorf("parseStamp(%q) accepted", bad)
		}
	}
	if got, err := parseStamp([]byte("xx\r\n5.5 "), []byte("TGB1PE")); err != nil || !got.Equal(time.Unix(5, 500_000_000)) {
		t.Errorf("parseStamp = %v, %v", got, err)
	}
}

// Every paced row with all clients compares with its lone-client row, not
// with the full-speed fan-out or direct throughput, and the table explains
// them.
func TestPacedComparesWithLoneClient(t *testing.T) {
	r := &Report{Config: Settings{FanoutPace: 400_000}}
	p := "100 clients, 400 KB/s"
	r.add("throughput", pathDirect, 20, nil, "", nil)
	r.add("fanout_lone", "100 clients", 10, nil, "", nil)
	r.add("fanout_paced_shell_lone", p, 400, nil, "the shell's own pace, nominal 400 KB/s: 4000 bytes every 10ms for 5s", nil)
	r.add("fanout_paced_shell", p, 380, nil, "", nil)
	r.add("fanout_paced_lone", p, 398, nil, "", nil)
	r.add("fanout_paced_slowest", p, 199, nil, "", nil)
	r.add("fanout_paced_lag_lone", p, 2, nil, "", nil)
	r.add("fanout_paced_lag_max", p, 30, nil, "", nil)
	r.computeRatios()
	for _, c := range []struct {
		metric string
		want   float64
	}{{"fanout_paced_shell", 0.95}, {"fanout_paced_slowest", 0.5}, {"fanout_paced_lag_max", 15}} {
		res := r.find(c.metric, p)
		if res == nil || res.Ratio == nil || *res.Ratio != c.want {
			t.Errorf("%s: ratio %+v, want %v", c.metric, res, c.want)
		}
	}
	for _, m := range []string{"fanout_paced_shell_lone", "fanout_paced_lone", "fanout_paced_lag_lone"} {
		if res := r.find(m, p); res == nil || res.Ratio != nil {
			t.Errorf("%s has no reference, got %+v", m, res)
		}
	}
	var out bytes.Buffer
	printTable(&out, r)
	for _, want := range []string{"paced fan-out, slowest client", "199.0 KB/s", "0.50", "paced fan-out, lag of the last client", "30.0 ms",
		"Paced fan-out (100 clients, 400 KB/s)", "nominal 400 KB/s: 4000 bytes every 10ms for 5s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
