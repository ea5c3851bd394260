package main

import (
	"log/slog"
	"runtime"
)

// relayProcs is the number of Ps (GOMAXPROCS) the gateway runs on when the
// environment does not set GOMAXPROCS: one on a host (or a cgroup limit)
// of at most two CPUs, else the runtime's default (def).
//
// Why: the gateway is a relay that shares a small host with the engine and
// the shells it relays, and its work per chunk is small. With two Ps every
// hand-off between its goroutines (a keystroke crosses several) wakes a
// second thread to look for work, which spins on the CPU that dockerd or
// the shell needs next: on a 2-CPU machine one P cut keystroke echo from
// about 1.5x to 1.35x a direct docker exec and the futex and nanosleep
// calls per keystroke by two thirds (docs/PERFORMANCE.md). On larger hosts
// an idle CPU absorbs that spinning, and more Ps serve more handshakes and
// fan-out in parallel, so the default stays.
func relayProcs(getenv func(string) string, def int) (n int, fromEnv bool) {
	if getenv("GOMAXPROCS") != "" {
		return def, true // the runtime already applied it
	}
	if def <= 2 {
		return 1, false
	}
	return def, false
}

// setProcs applies relayProcs and logs the choice.
func setProcs(getenv func(string) string, log *slog.Logger) {
	def := runtime.GOMAXPROCS(0)
	n, fromEnv := relayProcs(getenv, def)
	if n != def {
		runtime.GOMAXPROCS(n)
	}
	log.Debug("relay processors", "gomaxprocs", n, "cpus", runtime.NumCPU(), "from_env", fromEnv)
}
