// Command testtimes reads `go test -json` output and prints where the time
// went: each package's wall time, slowest first, then the slowest tests.
//
//	go test -race -count=1 -json ./... > /tmp/t.json
//	go run ./internal/testtimes [-n 20] [-sub] < /tmp/t.json
//
// A test's time is its own run time (Go restarts the clock of a parallel
// test when it resumes), so the tests of a package that run in parallel
// add up to more than its wall time. Subtests are left out unless -sub.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
)

// event is the part of a test2json event this reads.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// result is one finished package or test.
type result struct {
	Package, Test, Action string
	Elapsed               float64
}

func main() {
	n := flag.Int("n", 20, "how many tests to print")
	sub := flag.Bool("sub", false, "include subtests (Test/sub)")
	flag.Parse()
	pkgs, tests, err := read(os.Stdin, *sub)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(1)
	}
	write(os.Stdout, pkgs, tests, *n)
}

// read collects the packages' and tests' final events (pass, fail, skip).
func read(r io.Reader, sub bool) (pkgs, tests []result, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // not an event (e.g. a build error printed by go test)
		}
		var e event
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
		default:
			continue
		}
		res := result{Package: e.Package, Test: e.Test, Action: e.Action, Elapsed: e.Elapsed}
		switch {
		case e.Test == "":
			pkgs = append(pkgs, res)
		case sub || !strings.Contains(e.Test, "/"):
			tests = append(tests, res)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	slowest := func(rs []result) {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Elapsed > rs[j].Elapsed })
	}
	slowest(pkgs)
	slowest(tests)
	return pkgs, tests, nil
}

func write(w io.Writer, pkgs, tests []result, n int) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	var sum float64
	fmt.Fprintln(tw, "seconds\tresult\t package\t")
	for _, p := range pkgs {
		sum += p.Elapsed
		fmt.Fprintf(tw, "%.1f\t%s\t %s\t\n", p.Elapsed, p.Action, p.Package)
	}
	fmt.Fprintf(tw, "%.1f\t\t %d packages (their sum; they run -p at a time)\t\n", sum, len(pkgs))
	fmt.Fprintln(tw, "\t\t\t")
	fmt.Fprintln(tw, "seconds\tresult\t test\t")
	for i, t := range tests {
		if i == n {
			break
		}
		fmt.Fprintf(tw, "%.1f\t%s\t %s %s\t\n", t.Elapsed, t.Action, short(t.Package), t.Test)
	}
	_ = tw.Flush()
}

// short drops the module path from a package's import path.
func short(pkg string) string {
	if i := strings.Index(pkg, "/termgate/termgate/"); i >= 0 {
		return pkg[i+len("/termgate/termgate/"):]
	}
	return pkg
}
