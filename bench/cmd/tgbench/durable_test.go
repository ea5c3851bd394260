package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestDurableOverheads(t *testing.T) {
	r := &Report{}
	r.add("throughput", pathDirect, 100, nil, "", nil)
	r.add("throughput", pathSSH, 80, []float64{80, 100, 60}, "", nil)
	r.add("throughput", pathSSHDurable, 76, []float64{76, 90, 60}, "", nil)
	r.add("throughput", pathWS, 50, nil, "", nil)
	r.add("throughput", pathWSDurable, 40, nil, "", nil)
	r.add("echo_p50", pathSSH, 300, nil, "", nil)
	r.add("echo_p50", pathSSHDurable, 450, nil, "", nil)
	r.computeRatios()
	r.computeOverheads()
	for _, c := range []struct {
		metric, path string
		want         float64
	}{{"throughput", pathSSHDurable, 0.95}, {"throughput", pathWSDurable, 0.8}, {"echo_p50", pathSSHDurable, 1.5}} {
		res := r.find(c.metric, c.path)
		if res == nil || res.RatioInGateway == nil || *res.RatioInGateway != c.want {
			t.Errorf("%s %s: ratio to in-gateway %v, want %v", c.metric, c.path, res, c.want)
		}
	}
	if res := r.find("throughput", pathSSHDurable); len(res.PairedInGateway) != 3 || res.PairedInGateway[1] != 0.9 {
		t.Errorf("paired ratios to in-gateway = %v, want 0.95 0.9 1", res.PairedInGateway)
	}
	if res := r.find("throughput", pathSSH); res.RatioInGateway != nil {
		t.Errorf("an in-gateway path got a ratio to itself: %+v", res)
	}
	if res := r.find("throughput", pathSSHDurable); res.Ratio == nil || *res.Ratio != 0.76 {
		t.Errorf("the durable path's ratio to direct: %+v, want 0.76", res)
	}
	var out bytes.Buffer
	printTable(&out, r)
	for _, want := range []string{"DURABLE", "ssh-durable", "0.90 / 0.95 / 1.00", "76.0 MB/s", "0.95", "ratio >= 0.90: met", "0.80",
		"ratio >= 0.90: MISSED", "+150.0 us", "+200 us at most: met"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRouteSendsDurablePathsToTheDurableGateway(t *testing.T) {
	e := &env{containers: []string{"a", "b"}}
	if got := instanceFor(e, pathSSHDurable); got != "" {
		t.Errorf("without a durable gateway, instanceFor(ssh-durable) = %q, want none", got)
	}
	e.durable = &env{containers: []string{"da", "db"}}
	for path, want := range map[string]string{pathDirect: "a", pathSSH: "a", pathWS: "b", pathSSHDurable: "da", pathWSDurable: "db"} {
		if got := instanceFor(e, path); got != want {
			t.Errorf("instanceFor(%s) = %q, want %q", path, got, want)
		}
	}
}
