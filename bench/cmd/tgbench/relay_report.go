package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// relayCPUNote explains the relay's row of the CPU metric: a second
// reference beside the docker CLI (which stays the ratio's reference, as
// issue 11 names it).
const relayCPUNote = "relay process (a plain Go byte copy: io.Copy both ways), the same stream; what a zero-work relay costs per GB"

// relayMetrics are the metrics of the relay table.
var relayMetrics = []string{"throughput", "cpu_per_gb", "echo_p50", "echo_p99"}

// printRelayFloor prints every other path against the relay anchor: the
// part of a path's cost that is its own work, beyond being a process in
// the way. Nothing is printed without the relay's results.
func printRelayFloor(w io.Writer, r *Report) {
	type row struct {
		metric, path string
		value, relay float64
		unit         string
		paired       []float64
	}
	var rows []row
	for _, m := range relayMetrics {
		rel := r.find(m, pathRelay)
		if rel == nil || rel.Error != "" || rel.Value <= 0 {
			continue
		}
		for _, res := range r.Results {
			if res.Metric != m || res.Path == pathRelay || res.Path == refPath(m) || res.Error != "" {
				continue
			}
			rw := row{metric: m, path: res.Path, value: res.Value, relay: rel.Value, unit: res.Unit}
			// Run by run where both were sampled in the same rounds.
			if len(rel.Samples) == len(res.Samples) && len(res.Samples) > 1 {
				for k, v := range res.Samples {
					if rel.Samples[k] > 0 {
						rw.paired = append(rw.paired, round(v/rel.Samples[k]))
					}
				}
			}
			rows = append(rows, rw)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprint(w, "\nthe relay floor: each path against the direct exec through a plain byte relay process (same run)\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tPATH\tMEDIAN\tRELAY\tRATIO TO RELAY\tPAIRED MIN/MED/MAX\t")
	for _, rw := range rows {
		title, _, _ := metricInfo(rw.metric)
		paired := "-"
		if len(rw.paired) > 0 {
			paired = fmt.Sprintf("%.2f / %.2f / %.2f", slices.Min(rw.paired), median(rw.paired), slices.Max(rw.paired))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t\n", title, rw.path, formatValue(rw.value, rw.unit),
			formatValue(rw.relay, rw.unit), rw.value/rw.relay, paired)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nThe relay is the direct exec through a process that only copies bytes between the client and the")
	fmt.Fprintln(w, "engine's socket: the least any gateway costs on this machine (bench/README.md, the relay anchor).")
}
