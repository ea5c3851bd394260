// Command tgbench measures termgate against direct `docker exec`: output
// throughput, keystroke echo latency, attach time and fan-out, over SSH and
// WebSocket, and prints each as a ratio to the direct path. See
// bench/README.md for what is measured and how to read it.
//
// It builds nothing: it runs an existing termgate binary (-termgate) with a
// temporary state directory against benchmark containers it creates, and
// removes all of it before it exits.
//
//	go run ./bench/cmd/tgbench -termgate bin/termgate
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type config struct {
	termgate    string
	out         string
	image       string
	bytes       int
	runs        int
	keystrokes  int
	attaches    int
	fanout      int
	scale       int // SSH clients attached at once in the scale phase (0: skip it)
	cpuBytes    int
	openssh     bool
	relay       bool // the relay anchor (relay.go)
	timeout     time.Duration
	keep        bool
	quiet       bool
	gatewayArgs []string
	durable     bool     // also measure the durable paths (a second gateway with --durable)
	holder      string   // holder binary for the durable gateway (TERMGATE_HOLDER_BINARY)
	gatewayEnv  []string // extra environment of the gateway (set for the durable one)
	kubernetes  string   // auto, off or only (k8s.go)
	kubeconfig  string
	kubeImage   string
	// The paced fan-out (fanout_paced.go): bytes per second (0: skip
	// it) and how long the shell prints in each run.
	pace    int
	paceFor time.Duration
	// slowReaders is how many clients read at 100 KB/s in the catching-up
	// phase (catchup.go).
	slowReaders int
	// memSessions is how many sessions (one container each) the memory
	// phase creates per gateway (memory.go; 0: skip it).
	memSessions int
}

type listFlag []string

func (l *listFlag) String() string     { return fmt.Sprint(*l) }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("tgbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.termgate, "termgate", "bin/termgate", "termgate binary to benchmark (build it first: make build)")
	fs.StringVar(&c.out, "out", "bench/results.json", "write the results as JSON to this file (\"\" or \"-\": do not write)")
	fs.StringVar(&c.image, "image", "termgate-test:busybox", "image of the benchmark containers (scripts/test-image.sh builds the default)")
	fs.IntVar(&c.bytes, "bytes", 32_000_000, "bytes of output per throughput run")
	fs.IntVar(&c.runs, "runs", 5, "throughput runs per path (the median is reported; one extra warm-up run is discarded)")
	fs.IntVar(&c.keystrokes, "keystrokes", 300, "keystrokes timed per path for the echo latency (after 20 warm-up ones)")
	fs.IntVar(&c.attaches, "attaches", 10, "attaches timed per path (the median is reported)")
	fs.IntVar(&c.cpuBytes, "cpu-bytes", 100_000_000, "bytes of output per CPU-time run (gateway CPU per GB against the docker CLI's)")
	fs.BoolVar(&c.openssh, "openssh", true, "also measure the OpenSSH anchor: Debian's sshd on a loopback port with ForceCommand docker exec -it (needs openssh-server)")
	fs.BoolVar(&c.relay, "relay", true, "also measure the relay anchor: the direct exec through a plain byte-copying relay process (the least any gateway process costs)")
	fs.IntVar(&c.fanout, "fanout", 4, "clients attached to one session for the fan-out measurement, compared with one client alone (0: skip it)")
	pace := fs.String("fanout-pace", "400KB", "the paced fan-out's pace: the shell prints pace/100 bytes every 10 ms, with one client alone and with -fanout clients (KB, MB: 10^3, 10^6 bytes per second; 0: skip it)")
	fs.DurationVar(&c.paceFor, "fanout-pace-for", 5*time.Second, "how long the shell prints in each paced fan-out run")
	fs.IntVar(&c.slowReaders, "slow-readers", 100, "clients reading at 100 KB/s in the catching-up phase (WebSocket, past 40 SSH), 1..100")
	fs.IntVar(&c.memSessions, "mem-sessions", 50, "sessions (one container each) the memory phase creates in a fresh gateway, ordinary and then --durable, for the gateway's memory per session and the holder's per instance (0: skip it)")
	fs.IntVar(&c.scale, "scale-clients", 0, "SSH clients to attach at once, spread over the two benchmark sessions, for the scale measurement (e.g. 1000; 0: skip it)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "bound on the measurements (setup and cleanup are bounded separately, about 30 s each at worst)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary state directory and the gateway's log")
	fs.BoolVar(&c.quiet, "q", false, "no progress on stderr")
	gw := (*listFlag)(&c.gatewayArgs)
	fs.Var(gw, "gateway-arg", "extra argument for termgate (repeatable), e.g. -gateway-arg=--buffer-size=1MiB")
	fs.BoolVar(&c.durable, "durable", true, "also measure the durable paths: a second gateway with --durable, compared with the in-gateway paths")
	fs.StringVar(&c.holder, "holder", "", "holder binary for the durable gateway (TERMGATE_HOLDER_BINARY; default: the one the termgate binary embeds)")
	fs.StringVar(&c.kubernetes, "kubernetes", "auto", "the Kubernetes paths (termgate --backend kubernetes vs a direct client-go exec): auto (when the cluster answers), off, or only (no Docker paths)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "the Kubernetes paths' cluster (default: KUBECONFIG, else the test cluster of scripts/k8s-cluster.sh)")
	fs.StringVar(&c.kubeImage, "kube-image", "localhost/busybox:1", "image of the Kubernetes paths' pods (the test cluster has the default)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var err error
	if c.pace, err = parsePace(*pace); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (all settings are flags; see -help)", fs.Arg(0))
	}
	switch {
	case c.bytes < 1000 || c.bytes > 1<<30:
		return nil, fmt.Errorf("-bytes %d: use 1000..%d", c.bytes, 1<<30)
	case c.cpuBytes < 1000 || c.cpuBytes > 1<<31:
		return nil, fmt.Errorf("-cpu-bytes %d: use 1000..%d", c.cpuBytes, 1<<31)
	case c.runs < 1 || c.runs > 50:
		return nil, fmt.Errorf("-runs %d: use 1..50", c.runs)
	case c.keystrokes < 10 || c.keystrokes > 100_000:
		return nil, fmt.Errorf("-keystrokes %d: use 10..100000", c.keystrokes)
	case c.attaches < 1 || c.attaches > 1000:
		return nil, fmt.Errorf("-attaches %d: use 1..1000", c.attaches)
	case c.fanout < 0 || c.fanout > maxFanout:
		// Half of the fan-out clients use WebSocket: the gateway holds
		// at most 64 HTTP connections per address.
		return nil, fmt.Errorf("-fanout %d: use 0..%d", c.fanout, maxFanout)
	case c.paceFor < minPaceFor || c.paceFor > maxPaceFor:
		return nil, fmt.Errorf("-fanout-pace-for %s: use %s..%s", c.paceFor, minPaceFor, maxPaceFor)
	case c.scale < 0 || c.scale > maxScale:
		return nil, fmt.Errorf("-scale-clients %d: use 0..%d", c.scale, maxScale)
	case c.memSessions < 0 || c.memSessions > maxMemSessions:
		return nil, fmt.Errorf("-mem-sessions %d: use 0..%d (each is a container)", c.memSessions, maxMemSessions)
	case c.slowReaders < 1 || c.slowReaders > 100:
		return nil, fmt.Errorf("-slow-readers %d: use 1..100", c.slowReaders)
	case c.timeout <= 0:
		return nil, fmt.Errorf("-timeout must be positive")
	case c.kubernetes != "auto" && c.kubernetes != "off" && c.kubernetes != "only":
		return nil, fmt.Errorf("-kubernetes %q: use auto, off or only", c.kubernetes)
	}
	return c, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "tgbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	code := run(ctx, cfg)
	stop()
	os.Exit(code)
}

// run returns the exit status: 0 when every measurement succeeded, 1 when
// the benchmark could not run or some measurement failed.
func run(ctx context.Context, cfg *config) int {
	logf := func(format string, args ...any) {
		if !cfg.quiet {
			fmt.Fprintf(os.Stderr, "tgbench: "+format+"\n", args...)
		}
	}
	if err := checkOut(cfg.out); err != nil {
		fmt.Fprintln(os.Stderr, "tgbench:", err)
		return 1
	}
	if cfg.kubernetes == "only" {
		return runKubernetes(ctx, cfg, logf)
	}
	started := time.Now()
	env, err := setup(ctx, cfg, logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tgbench:", err)
		return 1
	}
	if cfg.durable {
		paths = append(paths, durablePaths()...)
		if err := setupDurable(ctx, cfg, env, logf); err != nil {
			// Only the durable paths fail (each metric says why).
			logf("%v", err)
		}
	}
	rctx, cancel := context.WithTimeoutCause(ctx, cfg.timeout, fmt.Errorf("the -timeout of %s ran out", cfg.timeout))
	rep := measureAll(rctx, env, cfg, logf)
	cancel()
	if err := env.teardown(logf); err != nil {
		fmt.Fprintln(os.Stderr, "tgbench: cleanup:", err)
		rep.Errors = append(rep.Errors, "cleanup: "+err.Error())
	}
	rep.DurationSec = time.Since(started).Seconds()
	printTable(os.Stdout, rep)
	if ctx.Err() != nil {
		logf("interrupted: %s not written", cfg.out)
		return 1
	}
	if cfg.out != "" && cfg.out != "-" {
		if err := writeJSON(cfg.out, rep); err != nil {
			fmt.Fprintln(os.Stderr, "tgbench:", err)
			return 1
		}
		logf("results written to %s", cfg.out)
	}
	if runKubernetes(ctx, cfg, logf) != 0 || len(rep.Errors) > 0 {
		return 1
	}
	return 0
}
