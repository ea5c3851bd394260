// Command tgsoak is termgate's stress run (make soak): it runs the real
// binary against containers it creates (and, for the engine faults, against
// a private second Docker engine it starts and kills), puts it through
// attach/detach cycles, a reset storm, clients that never read, container,
// engine and gateway faults, SIGTERM with many sessions and byte-exact
// pastes, and prints one table: goroutines, descriptors and RSS before and
// after each case, shells per container, per-session cost, reset latency and
// pass/fail. It exits 1 on any leak or leftover. docs/RELIABILITY.md says
// what each case checks and records the figures.
//
//	go run ./soak/cmd/tgsoak -termgate bin/termgate          # full run (many minutes)
//	go run ./soak/cmd/tgsoak -termgate bin/termgate -short   # the CI run (a minute or two)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// config is one run's settings: the flags, and the counts -short selects.
type config struct {
	termgate string
	image    string
	short    bool
	only     []string // case names to run (empty: all)
	skip     []string // case names to leave out
	timeout  time.Duration
	keep     bool
	quiet    bool
	engine   bool // run the private-engine cases

	counts
}

// counts are the sizes of the cases: short for CI, full for make soak.
type counts struct {
	Cycles          int           // attach/detach cycles, over both listeners, all close kinds
	OpenSSHKills    int           // OpenSSH clients killed with -9 (plus one ~. each run)
	Resets          int           // resets over the three routes
	ResetWorkers    int           // concurrent resetters in the concurrent part
	NeverReaders    int           // clients that never read while output streams
	StreamBytes     int64         // output streamed past them
	DockerSessions  int           // containers with an idle session each (per-session cost, SIGTERM)
	Streamers       int           // streaming clients at SIGTERM (Docker)
	LocalSessions   int           // local sessions at SIGTERM
	PasteSizes      []int         // bytes of each paste; alternating SSH and WebSocket
	DurableSessions int           // streaming durable sessions through a gateway SIGKILL
	StormFor        time.Duration // how long one client sends resizes as fast as it can
	// RestartInstances: containers with a session each through a gateway
	// SIGKILL and restart (restart-at-scale; -restart-instances overrides).
	RestartInstances int
}

var (
	shortCounts = counts{
		Cycles: 120, OpenSSHKills: 2, Resets: 9, ResetWorkers: 3,
		NeverReaders: 2, StreamBytes: 32 << 20,
		DockerSessions: 3, Streamers: 4, LocalSessions: 50,
		PasteSizes:      []int{1 << 20, 1 << 20},
		DurableSessions: 3, StormFor: 3 * time.Second,
		RestartInstances: 20,
	}
	fullCounts = counts{
		Cycles: 10_000, OpenSSHKills: 20, Resets: 300, ResetWorkers: 8,
		NeverReaders: 8, StreamBytes: 200 << 20,
		DockerSessions: 20, Streamers: 20, LocalSessions: 1000,
		PasteSizes:      []int{1 << 20, 1 << 20, 2 << 20, 2 << 20, 3 << 20, 3 << 20, 5 << 20, 5 << 20, 7 << 20, 7 << 20, 10 << 20, 10 << 20},
		DurableSessions: 50, StormFor: 10 * time.Second,
		RestartInstances: 300,
	}
)

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("tgsoak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var only, skip string
	fs.StringVar(&c.termgate, "termgate", "bin/termgate", "termgate binary to run (build it first: make build)")
	fs.StringVar(&c.image, "image", "termgate-test:busybox", "image of the containers (scripts/test-image.sh builds it)")
	fs.BoolVar(&c.short, "short", false, "the CI run: small counts, a minute or two")
	fs.StringVar(&only, "cases", "", "comma-separated cases to run (default all; see -list)")
	fs.StringVar(&skip, "skip", "", "comma-separated cases to leave out")
	fs.DurationVar(&c.timeout, "timeout", 0, "bound on the whole run (default 10m with -short, 2h without)")
	fs.BoolVar(&c.engine, "engine", true, "run the cases that start and kill a private dockerd (needs root and dockerd)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (gateway logs, state)")
	fs.BoolVar(&c.quiet, "q", false, "no progress on stderr")
	var cycles, resets, locals, restarts int
	fs.IntVar(&cycles, "cycles", 0, "attach/detach cycles (default: the mode's count)")
	fs.IntVar(&resets, "resets", 0, "resets in the storm (default: the mode's count)")
	fs.IntVar(&locals, "local-sessions", 0, "local sessions at SIGTERM (default: the mode's count)")
	fs.IntVar(&restarts, "restart-instances", 0, "containers through restart-at-scale (default: 300, 20 with -short)")
	list := fs.Bool("list", false, "list the cases and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *list {
		for _, k := range allCases {
			fmt.Fprintf(stderr, "%-16s %s\n", k.name, k.what)
		}
		return nil, flag.ErrHelp
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (all settings are flags; see -help)", fs.Arg(0))
	}
	c.only, c.skip = splitList(only), splitList(skip)
	for _, n := range append(append([]string(nil), c.only...), c.skip...) {
		if findCase(n) == nil {
			return nil, fmt.Errorf("unknown case %q (see -list)", n)
		}
	}
	c.counts = fullCounts
	if c.short {
		c.counts = shortCounts
	}
	for _, o := range []struct {
		v   int
		dst *int
	}{{cycles, &c.Cycles}, {resets, &c.Resets}, {locals, &c.LocalSessions}, {restarts, &c.RestartInstances}} {
		if o.v < 0 || o.v > 1_000_000 {
			return nil, fmt.Errorf("a count of %d: use 1..1000000", o.v)
		}
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	if c.timeout == 0 {
		c.timeout = 2 * time.Hour
		if c.short {
			c.timeout = 10 * time.Minute
		}
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "tgsoak:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep := run(ctx, cfg, os.Stderr)
	stop()
	printTable(os.Stdout, rep)
	if !rep.ok() {
		os.Exit(1)
	}
}
