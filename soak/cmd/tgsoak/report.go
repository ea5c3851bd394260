package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// printTable writes the run's table: a row per case, then each case's
// notes (measurements) and failures.
func printTable(w io.Writer, rep *report) {
	mode := "full"
	if rep.Short {
		mode = "short"
	}
	fmt.Fprintf(w, "tgsoak run %s (%s), %s, load %s, took %s\n\n", rep.RunID, mode,
		rep.Started.UTC().Format("2006-01-02 15:04 UTC"), rep.Load, rep.Took.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tGOROUTINES\tFDS\tRSS MiB (peak)\tTHREADS\tSHELLS/CONTAINER\tTIME")
	for _, r := range rep.Results {
		verdict := "pass"
		switch {
		case r.Skipped != "":
			verdict = "skipped"
		case len(r.Failures) > 0:
			verdict = "FAIL"
		}
		g, f, m, th := "-", "-", "-", "-"
		if r.Before != nil && r.After != nil {
			g = fmt.Sprintf("%d -> %d", r.Before.Goroutines, r.After.Goroutines)
			f = fmt.Sprintf("%d -> %d", r.Before.FDs, r.After.FDs)
			m = fmt.Sprintf("%.1f -> %.1f", mib(r.Before.RSSKiB), mib(r.After.RSSKiB))
			th = fmt.Sprintf("%d -> %d", r.Before.Threads, r.After.Threads)
		}
		if r.PeakRSS > 0 {
			m += fmt.Sprintf(" (%.1f)", mib(r.PeakRSS))
		}
		shells := r.Shells
		if shells == "" {
			shells = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, verdict, g, f, m, th, shells, r.Took.Round(100*time.Millisecond))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range rep.Results {
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s: %s\n", r.Name, n)
		}
	}
	var bad []string
	for _, r := range rep.Results {
		if r.Skipped != "" {
			bad = append(bad, fmt.Sprintf("skipped %s: %s", r.Name, r.Skipped))
		}
		for _, f := range r.Failures {
			bad = append(bad, fmt.Sprintf("FAIL %s: %s", r.Name, f))
		}
	}
	for _, e := range rep.Errors {
		bad = append(bad, "error: "+e)
	}
	if len(bad) > 0 {
		fmt.Fprintln(w)
		for _, b := range bad {
			fmt.Fprintln(w, "  "+strings.ReplaceAll(b, "\n", "\n    "))
		}
	}
	verdict := "PASS: no leak, no leftover"
	if !rep.ok() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\n%s\n", verdict)
}

func mib(kib int64) float64 { return float64(kib) / 1024 }
