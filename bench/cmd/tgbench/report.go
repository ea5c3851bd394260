package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what tgbench writes as JSON (-out).
type Report struct {
	Started     time.Time `json:"started"`
	DurationSec float64   `json:"duration_sec"`
	Host        Host      `json:"host"`
	Config      Settings  `json:"config"`
	Results     []Result  `json:"results"`
	Errors      []string  `json:"errors,omitempty"`
}

// Host describes where the numbers were taken.
type Host struct {
	GOOS          string `json:"goos"`
	GOARCH        string `json:"goarch"`
	CPUs          int    `json:"cpus"`
	GoVersion     string `json:"go_version"`
	DockerVersion string `json:"docker_version"`
	DockerAPI     string `json:"docker_api"`
	Termgate      string `json:"termgate"`
	// Load averages (1 min) when the measurements started and ended, -1
	// when unknown: other work on the machine makes every number noisier.
	LoadStart float64 `json:"load_avg_start"`
	LoadEnd   float64 `json:"load_avg_end"`
}

// loadAvg returns the 1-minute load average, or -1 when it is unknown.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscan(string(data), &l); err != nil {
		return -1
	}
	return l
}

// Settings are the run's parameters.
type Settings struct {
	Bytes      int    `json:"bytes"`
	Runs       int    `json:"runs"`
	Keystrokes int    `json:"keystrokes"`
	Attaches   int    `json:"attaches"`
	Fanout     int    `json:"fanout"`
	FanoutPace int    `json:"fanout_pace_bytes_per_sec,omitempty"` // the paced fan-out's nominal pace
	Scale      int    `json:"scale_clients,omitempty"`
	Image      string `json:"image"`
	Shell      string `json:"shell"`
	Window     string `json:"window"`
}

// Result is one metric on one path. Ratio is the value divided by the
// direct path's value for the same metric (absent for the direct path).
type Result struct {
	Metric string   `json:"metric"`
	Path   string   `json:"path"`
	Unit   string   `json:"unit"`
	Better string   `json:"better"` // "higher" or "lower"
	Value  float64  `json:"value"`
	Ratio  *float64 `json:"ratio_to_direct,omitempty"`
	// RatioInGateway is a durable path's value divided by its in-gateway
	// path's (ssh-durable / ssh), in the same run.
	RatioInGateway *float64 `json:"ratio_to_in_gateway,omitempty"`
	// PairedInGateway holds, run by run, a durable path's sample divided
	// by its in-gateway path's sample of the same round.
	PairedInGateway []float64 `json:"paired_ratios_to_in_gateway,omitempty"`
	Samples         []float64 `json:"samples,omitempty"`
	Min             float64   `json:"min,omitempty"`
	Max             float64   `json:"max,omitempty"`
	// Paired holds, run by run, this path's sample divided by the
	// reference path's sample of the same run (the paths are measured in
	// interleaved rounds, so each pair saw the same machine load).
	Paired []float64 `json:"paired_ratios,omitempty"`
	Note   string    `json:"note,omitempty"`
	Error  string    `json:"error,omitempty"`
}

// The metrics, in the order they are printed.
var metricOrder = []struct{ name, title, unit, better string }{
	{"throughput", "throughput", "MB/s", "higher"},
	{"cpu_per_gb", "gateway CPU per GB", "s/GB", "lower"},
	{"echo_p50", "keystroke echo p50", "us", "lower"},
	{"echo_p99", "keystroke echo p99", "us", "lower"},
	{"attach", "attach (existing session)", "ms", "lower"},
	{"attach_new", "attach (new session)", "ms", "lower"},
	{"fanout_lone", "fan-out, one client alone", "MB/s", "higher"},
	{"fanout_client", "fan-out, mean per client", "MB/s", "higher"},
	{"fanout_slowest", "fan-out, slowest client", "MB/s", "higher"},
	{"fanout_fastest", "fan-out, the shell's pace", "MB/s", "higher"},
	{"fanout_paced_shell_lone", "paced fan-out, the shell's pace, one client", "KB/s", "higher"},
	{"fanout_paced_shell", "paced fan-out, the shell's pace", "KB/s", "higher"},
	{"fanout_paced_lone", "paced fan-out, one client alone", "KB/s", "higher"},
	{"fanout_paced_client", "paced fan-out, mean per client", "KB/s", "higher"},
	{"fanout_paced_slowest", "paced fan-out, slowest client", "KB/s", "higher"},
	{"fanout_paced_lag_lone", "paced fan-out, lag of one client alone", "ms", "lower"},
	{"fanout_paced_lag_p50", "paced fan-out, lag p50", "ms", "lower"},
	{"fanout_paced_lag_max", "paced fan-out, lag of the last client", "ms", "lower"},
	{"fanout_paced_cpu_lone", "paced fan-out, gateway CPU, one client", "%", "lower"},
	{"fanout_paced_cpu", "paced fan-out, gateway CPU", "%", "lower"},
	{"fanout_paced_wait_lone", "paced fan-out, gateway waiting for a CPU, one client", "%", "lower"},
	{"fanout_paced_wait", "paced fan-out, gateway waiting for a CPU", "%", "lower"},
	{"fanout_paced_bench_lone", "paced fan-out, tgbench CPU, one client", "%", "lower"},
	{"fanout_paced_bench", "paced fan-out, tgbench CPU (its clients)", "%", "lower"},
	{"fanout_paced_host_lone", "paced fan-out, machine busy, one client", "%", "lower"},
	{"fanout_paced_host", "paced fan-out, machine busy", "%", "lower"},
	{"catchup_lone", "catching up, the shell's pace, one client", "MB/s", "higher"},
	{"catchup_slow", "catching up, the shell's pace with 100 KB/s readers", "MB/s", "higher"},
	{"catchup_mem", "catching up, gateway memory with the slow readers", "MiB", "lower"},
	{"skip_cost", "catching up, one skip's redraw", "ms", "lower"},
	{"scale_attach_all", "scale, all clients attached", "s", "lower"},
	{"scale_attach_p50", "scale, attach p50", "ms", "lower"},
	{"scale_attach_p99", "scale, attach p99", "ms", "lower"},
	{"scale_mem", "scale, gateway RSS per client", "KiB", "lower"},
	{"scale_idle_cpu", "scale, gateway CPU while idle", "%", "lower"},
	{"scale_broadcast_p50", "scale, output to each client p50", "ms", "lower"},
	{"scale_broadcast_max", "scale, output to the last client", "ms", "lower"},
	{"mem_session_rss", "memory, gateway RSS per idle session", "KiB", "lower"},
	{"mem_session_pss", "memory, gateway PSS per idle session", "KiB", "lower"},
	{"mem_session_heap", "memory, gateway heap in use per idle session", "KiB", "lower"},
	{"mem_holder_pss", "memory, holder PSS per instance", "KiB", "lower"},
	{"mem_holder_procs", "memory, holder processes per instance", "procs", "lower"},
	{"rsync_up", "rsync -a 100 MiB up (vs over a plain sshd)", "s", "lower"},
	{"rsync_down", "rsync -a 100 MiB down (vs over a plain sshd)", "s", "lower"},
}

func metricInfo(name string) (title, unit, better string) {
	for _, m := range metricOrder {
		if m.name == name {
			return m.title, m.unit, m.better
		}
	}
	return name, "", ""
}

// add records a result; err (if any) makes it a failed one.
func (r *Report) add(metric, path string, value float64, samples []float64, note string, err error) {
	_, unit, better := metricInfo(metric)
	res := Result{Metric: metric, Path: path, Unit: unit, Better: better, Value: round(value), Note: note}
	for _, s := range samples {
		res.Samples = append(res.Samples, round(s))
	}
	if len(samples) > 0 {
		res.Min, res.Max = round(slices.Min(samples)), round(slices.Max(samples))
	}
	if err != nil {
		res.Error = err.Error()
		res.Value = 0
		r.Errors = append(r.Errors, fmt.Sprintf("%s %s: %v", metric, path, err))
	}
	r.Results = append(r.Results, res)
}

// fail records that a metric could not be measured on a path.
func (r *Report) fail(metric, path string, err error) { r.add(metric, path, 0, nil, "", err) }

// addSamples records a metric measured from samples, or a failure when
// there are fewer than want (the run was interrupted or ran out of time).
func (r *Report) addSamples(ctx context.Context, metric, path string, value float64, samples []float64, want int, note string) {
	if len(samples) < want {
		why := errors.New("interrupted")
		if ctx.Err() != nil {
			why = context.Cause(ctx)
		}
		r.fail(metric, path, fmt.Errorf("only %d of %d samples: %w", len(samples), want, why))
		return
	}
	r.add(metric, path, value, samples, note, nil)
}

func round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	return math.Round(v*1000) / 1000
}

// refPath is the path a metric's ratios compare with: the direct exec,
// except for the CPU metric, whose reference is the docker CLI relaying the
// same stream.
func refPath(metric string) string {
	switch {
	case metric == "cpu_per_gb":
		return pathCLI
	case strings.HasPrefix(metric, "mem_session"):
		return pathMemOrdinary // a durable session against an ordinary one
	case strings.HasPrefix(metric, "rsync_"):
		return pathRsyncSSHD // rsync.go
	}
	return pathDirect
}

// direct returns the reference path's result for a metric. The fan-out
// metrics compare with direct throughput, and a new session's attach with a
// fresh docker exec.
func (r *Report) direct(metric string) (Result, bool) {
	ref := refPath(metric)
	switch {
	case strings.HasPrefix(metric, "fanout_paced"):
		return r.pacedDirect(metric)
	case strings.HasPrefix(metric, "fanout") && metric != "fanout_lone":
		// Against one client alone on the session, when it was measured.
		for _, res := range r.Results {
			if res.Metric == "fanout_lone" && res.Error == "" && res.Value > 0 {
				return res, true
			}
		}
		metric = "throughput"
	case strings.HasPrefix(metric, "fanout"):
		metric = "throughput"
	case metric == "catchup_slow": // against the shell's pace alone
		if res := r.find("catchup_lone", catchupPath); res != nil && res.Error == "" && res.Value > 0 {
			return *res, true
		}
		return Result{}, false
	case metric == "catchup_lone":
		return Result{}, false // the shell's nominal pace is the reference
	case metric == "skip_cost" || metric == "catchup_mem" || strings.HasPrefix(metric, "mem_holder"):
		return Result{}, false // absolute
	case metric == "attach_new":
		metric = "attach"
	}
	for _, res := range r.Results {
		if res.Metric == metric && res.Path == ref && res.Error == "" && res.Value > 0 {
			return res, true
		}
	}
	return Result{}, false
}

// computeRatios fills in Ratio for every successful termgate result.
func (r *Report) computeRatios() {
	for i, res := range r.Results {
		if res.Path == refPath(res.Metric) || res.Error != "" {
			continue
		}
		if d, ok := r.direct(res.Metric); ok {
			ratio := round(res.Value / d.Value)
			r.Results[i].Ratio = &ratio
			// Paired only where both were sampled in the same rounds.
			if d.Metric == res.Metric && len(d.Samples) == len(res.Samples) && len(res.Samples) > 1 {
				r.Results[i].Paired = nil
				for k, v := range res.Samples {
					if d.Samples[k] > 0 {
						r.Results[i].Paired = append(r.Results[i].Paired, round(v/d.Samples[k]))
					}
				}
			}
		}
	}
}

// printTable prints one line per termgate result, with the direct value
// and the ratio next to it.
func printTable(w io.Writer, r *Report) {
	fmt.Fprintf(w, "\ntermgate vs direct docker exec — %d CPUs, Docker %s (API %s), %s\n",
		r.Host.CPUs, r.Host.DockerVersion, r.Host.DockerAPI, r.Host.GoVersion)
	fmt.Fprintf(w, "throughput: %d bytes, median of %d runs; echo: %d keystrokes; attach: median of %d; fan-out: %d clients\n\n",
		r.Config.Bytes, r.Config.Runs, r.Config.Keystrokes, r.Config.Attaches, r.Config.Fanout)
	if r.Config.Scale > 0 {
		fmt.Fprintf(w, "scale: %d SSH clients attached at once\n", r.Config.Scale)
	}
	if r.Host.LoadStart >= 0 {
		fmt.Fprintf(w, "load average %.1f at the start, %.1f at the end", r.Host.LoadStart, r.Host.LoadEnd)
		if max(r.Host.LoadStart, r.Host.LoadEnd) > float64(r.Host.CPUs)/2 {
			fmt.Fprint(w, " — the machine is busy: expect noisy numbers, run again when it is idle")
		}
		fmt.Fprint(w, "\n\n")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tPATH\tMEDIAN\tMIN..MAX\tREFERENCE\tRATIO\tPAIRED MIN/MED/MAX\t")
	for _, m := range metricOrder {
		d, haveDirect := r.direct(m.name)
		directCol := "-"
		if haveDirect {
			directCol = formatValue(d.Value, d.Unit)
		} else if dr := r.find(m.name, refPath(m.name)); dr != nil && dr.Error != "" {
			directCol = "failed"
		}
		if haveDirect && d.Metric == m.name {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\t\t\t\n", m.title, d.Path, formatValue(d.Value, d.Unit), spread(d))
		}
		for _, res := range r.Results {
			if res.Metric != m.name || res.Path == refPath(m.name) {
				continue
			}
			if res.Error != "" {
				fmt.Fprintf(tw, "%s\t%s\tfailed (below)\t\t%s\t\t\t\n", m.title, res.Path, directCol)
				continue
			}
			ratio := "-"
			if res.Ratio != nil {
				ratio = fmt.Sprintf("%.2f", *res.Ratio)
			}
			paired := "-"
			if len(res.Paired) > 0 {
				paired = fmt.Sprintf("%.2f / %.2f / %.2f", slices.Min(res.Paired), median(res.Paired), slices.Max(res.Paired))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.title, res.Path, formatValue(res.Value, res.Unit), spread(res), directCol, ratio, paired)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "\nratio = path / reference (the direct Engine API exec; for CPU per GB the docker CLI relaying the same stream):")
	fmt.Fprintln(w, "throughput, higher is better (1 = as fast as docker exec); latency, attach and CPU, lower is better.")
	fmt.Fprintln(w, "Paired ratios divide each run by the reference's run of the same round. Fan-out compares with one client")
	fmt.Fprintln(w, "alone on the session (fanout_lone; that one with direct throughput). Scale has no reference (bench/README.md).")
	fmt.Fprintln(w, "Memory per session: a durable session against an ordinary one (issue 34's target: at most 1.5, not enforced).")
	printPacedNotes(w, r)
	printRelayFloor(w, r)
	printOverheads(w, r)
	for _, e := range r.Errors {
		fmt.Fprintln(w, "error:", e)
	}
}

// spread is a result's min..max over its samples, or "-".
func spread(res Result) string {
	if len(res.Samples) < 2 {
		return "-"
	}
	return formatValue(res.Min, res.Unit) + ".." + formatValue(res.Max, res.Unit)
}

func (r *Report) find(metric, path string) *Result {
	for i := range r.Results {
		if r.Results[i].Metric == metric && r.Results[i].Path == path {
			return &r.Results[i]
		}
	}
	return nil
}

func formatValue(v float64, unit string) string {
	switch unit {
	case "us":
		return fmt.Sprintf("%.0f us", v)
	case "ms":
		return fmt.Sprintf("%.1f ms", v)
	case "s/GB":
		return fmt.Sprintf("%.2f s/GB", v)
	case "s":
		return fmt.Sprintf("%.2f s", v)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

// checkOut fails early when -out names a file in a directory that does
// not exist.
func checkOut(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return fmt.Errorf("-out %s: no directory %s (run from the repository root, or pass -out)", path, filepath.Dir(path))
	}
	return nil
}

func writeJSON(path string, r *Report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
