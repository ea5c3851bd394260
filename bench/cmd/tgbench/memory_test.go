package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The memory rows compare a durable session with an ordinary one; the
// holder's rows have no reference.
func TestMemoryRowsCompareDurableWithOrdinary(t *testing.T) {
	r := &Report{}
	ord := memResult{before: memSample{rss: 40 << 20, pss: 20 << 20, heap: 5 << 20}, after: memSample{rss: 50 << 20, pss: 30 << 20, heap: 10 << 20}}
	dur := memResult{before: memSample{rss: 40 << 20, pss: 20 << 20, heap: 5 << 20}, after: memSample{rss: 65 << 20, pss: 45 << 20, heap: 20 << 20}}
	ord.report(r, pathMemOrdinary, 100)
	dur.report(r, pathMemDurable, 100)
	r.add("mem_holder_pss", pathMemDurable, 4096, nil, "", nil)
	r.add("mem_holder_procs", pathMemDurable, 1, nil, "", nil)
	r.computeRatios()
	for _, c := range []struct {
		metric     string
		ord, ratio float64
	}{{"mem_session_rss", 102.4, 2.5}, {"mem_session_pss", 102.4, 2.5}, {"mem_session_heap", 51.2, 3}} {
		o, d := r.find(c.metric, pathMemOrdinary), r.find(c.metric, pathMemDurable)
		if o == nil || o.Value != c.ord || o.Ratio != nil {
			t.Errorf("%s ordinary: %+v, want %v KiB and no ratio", c.metric, o, c.ord)
		}
		if d == nil || d.Ratio == nil || *d.Ratio != c.ratio {
			t.Errorf("%s durable: %+v, want the ratio %v to ordinary", c.metric, d, c.ratio)
		}
	}
	if res := r.find("mem_holder_pss", pathMemDurable); res.Ratio != nil {
		t.Errorf("the holder's PSS got a ratio: %+v", res)
	}
	var out bytes.Buffer
	printTable(&out, r)
	for _, want := range []string{"gateway RSS per idle session", "docker, durable", "256.0 KiB", "102.4 KiB", "2.50", "4096.0 KiB", "1.0 procs", "at most 1.5"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestProcPSSReadsItself(t *testing.T) {
	pss, err := procPSS(os.Getpid())
	if err != nil {
		t.Skipf("no smaps_rollup here: %v", err)
	}
	if rss, err := procRSS(os.Getpid()); err != nil || pss <= 0 || pss > rss {
		t.Errorf("PSS %d, RSS %d (%v): want 0 < PSS <= RSS", pss, rss, err)
	}
	if isHolder(os.Getpid()) {
		t.Error("the test binary was taken for a holder")
	}
}

func TestHolderArgs(t *testing.T) {
	for args, want := range map[string]bool{
		"/tmp/.termgate/holder-fa957d35e36d2d98 serve --key-stdin --socket /tmp/.termgate/holder.sock -- /bin/sh":           true,
		"./holder serve --key-stdin --session 78fd --attach --install-as /tmp/.termgate/holder-fa957d35e36d2d98 -- /bin/sh": true,
		"/tmp/.termgate/holder-fa957d35e36d2d98 sftp":                                                                       false,
		"/bin/sh": false,
		"/sbin/docker-init -- /bin/sh -c sleep 1000000": false,
		"./placeholder serve":                           false,
	} {
		if got := holderArgs(strings.Fields(args)); got != want {
			t.Errorf("holderArgs(%q) = %v, want %v", args, got, want)
		}
	}
}
