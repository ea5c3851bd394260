package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"text/tabwriter"
)

// The durable paths (issue 7): the same SSH and WebSocket clients, through a
// second gateway run with --durable, whose sessions are held by the holder
// program inside the instance. Each is compared with its in-gateway path in
// the same interleaved run, so that the holder's cost is what differs.
const (
	pathSSHDurable = "ssh-durable"
	pathWSDurable  = "websocket-durable"
)

// Targets of issue 7 item 8, printed next to the numbers (never enforced:
// performance is measured, not asserted).
const (
	targetThroughputRatio = 0.90 // durable throughput at least 90 % of in-gateway
	targetEchoOverheadUS  = 200  // durable echo at most 0.2 ms slower
)

// inGateway maps a durable path to the in-gateway path it is compared with.
func inGateway(path string) (string, bool) {
	switch path {
	case pathSSHDurable:
		return pathSSH, true
	case pathWSDurable:
		return pathWS, true
	}
	return "", false
}

// route returns the run whose gateway serves path, and the path as that
// gateway sees it: a durable path goes to the --durable gateway (nil when
// it did not start).
func (e *env) route(path string) (*env, string) {
	if base, ok := inGateway(path); ok {
		return e.durable, base
	}
	return e, path
}

// setupDurable starts the --durable gateway with containers of its own (a
// run of its own: its own label, state directory and log), for the durable
// paths. A gateway that cannot start durable fails only those paths.
func setupDurable(ctx context.Context, cfg *config, e *env, logf func(string, ...any)) error {
	dcfg := *cfg
	dcfg.gatewayArgs = append([]string{"--durable"}, cfg.gatewayArgs...)
	dcfg.openssh = false // one anchor is enough: the first run's
	dcfg.relay = false
	if cfg.holder != "" {
		abs, err := filepath.Abs(cfg.holder)
		if err != nil {
			return err
		}
		dcfg.gatewayEnv = []string{"TERMGATE_HOLDER_BINARY=" + abs}
	}
	logf("durable paths: a second gateway with --durable")
	de, err := setup(ctx, &dcfg, logf)
	if err != nil {
		return fmt.Errorf("the --durable gateway: %w", err)
	}
	e.durable = de
	return nil
}

// durablePaths are added to every interleaved phase when -durable is on.
func durablePaths() []string { return []string{pathSSHDurable, pathWSDurable} }

// computeOverheads fills in each durable result's ratio to its in-gateway
// path.
func (r *Report) computeOverheads() {
	for i, res := range r.Results {
		base, ok := inGateway(res.Path)
		if !ok || res.Error != "" {
			continue
		}
		if b := r.find(res.Metric, base); b != nil && b.Error == "" && b.Value > 0 {
			ratio := round(res.Value / b.Value)
			r.Results[i].RatioInGateway = &ratio
			// Run by run where both were sampled in the same rounds: each
			// pair saw the same load on the machine.
			r.Results[i].PairedInGateway = nil
			if len(b.Samples) == len(res.Samples) && len(res.Samples) > 1 {
				for k, v := range res.Samples {
					if b.Samples[k] > 0 {
						r.Results[i].PairedInGateway = append(r.Results[i].PairedInGateway, round(v/b.Samples[k]))
					}
				}
			}
		}
	}
}

// printOverheads prints the durable paths against the in-gateway ones, with
// the targets of issue 7 (throughput ratio, echo latency difference).
func printOverheads(w io.Writer, r *Report) {
	var rows []Result
	for _, res := range r.Results {
		if res.RatioInGateway != nil {
			rows = append(rows, res)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprint(w, "\ndurable (held by the holder in the instance) vs in-gateway sessions, same run\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tPATH\tDURABLE\tIN-GATEWAY\tRATIO\tPAIRED MIN/MED/MAX\tDIFFERENCE\tTARGET\t")
	for _, m := range metricOrder {
		for _, res := range rows {
			if res.Metric != m.name {
				continue
			}
			base, _ := inGateway(res.Path)
			b := r.find(res.Metric, base)
			diff := res.Value - b.Value
			target := ""
			switch {
			case m.name == "throughput":
				target = fmt.Sprintf("ratio >= %.2f: %s", targetThroughputRatio, met(*res.RatioInGateway >= targetThroughputRatio))
			case m.name == "echo_p50" || m.name == "echo_p99":
				target = fmt.Sprintf("+%d us at most: %s", targetEchoOverheadUS, met(diff <= targetEchoOverheadUS))
			}
			paired := "-"
			if len(res.PairedInGateway) > 0 {
				paired = fmt.Sprintf("%.2f / %.2f / %.2f", slices.Min(res.PairedInGateway), median(res.PairedInGateway), slices.Max(res.PairedInGateway))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%+.1f %s\t%s\t\n", m.title, res.Path, formatValue(res.Value, res.Unit),
				formatValue(b.Value, b.Unit), *res.RatioInGateway, paired, diff, res.Unit, target)
		}
	}
	tw.Flush()
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// errNoDurable fails the durable paths when their gateway did not start.
var errNoDurable = errors.New("no --durable gateway (see the log above: it did not start)")
