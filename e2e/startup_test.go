package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// slowKillScript makes the container's /bin/sh take 5 s before running
// the gateway's kill script (argv[0] termgate-kill), and nothing else: its
// start-up sweep is still running when the restarted gateway listens.
const slowKillScript = `rm /bin/sh && printf '%s\n' '#!/bin/busybox sh' \
	'case "$*" in *termgate-kill*) sleep 5;; esac' \
	'exec /bin/busybox sh "$@"' >/bin/sh && chmod 755 /bin/sh`

// Issue 34 item 4 (stress round 4, D1/D2): a gateway killed with SIGKILL
// leaves a shell in each of 30 instances; the next run listens before its
// sweep is done (one instance's sweep is made slow), ends every old shell
// in the background, and an attach to the instance still being swept waits
// for it and lands in exactly one shell, never beside the old one. The
// sweep logs one summary line, no line naming every instance.
func TestStartUpSweepsInTheBackground(t *testing.T) {
	t.Parallel()
	const n = 30
	suffixes := make([]string, n)
	for i := range suffixes {
		suffixes[i] = fmt.Sprintf("web-%02d", i)
	}
	d := &durableGW{gateway: newGateway(t, options{containers: suffixes}), idle: 10 * time.Minute}
	old := map[string]string{}
	for _, s := range suffixes {
		name := d.name(s)
		tm := d.attach(t, keyAdmin, name, 80, 24)
		tm.roundTrip()
		tm.close() // detached: the session and its shell stay (one key may hold 20 connections)
		m := sessionMarkers(t, name)
		if len(m) != 1 {
			t.Fatalf("%s: %d sessions' processes before the crash, want 1: %v", name, len(m), m)
		}
		old[name] = m[0]
	}
	d.kill9(t)
	slow := d.name(suffixes[n/2])
	dockerExec(t, slow, slowKillScript)

	start := time.Now()
	d.restart(t) // returns once /healthz answers
	listening := time.Since(start)
	if strings.Contains(d.logs.String(), "start-up sweep done") {
		t.Fatalf("the sweep was done before the gateway listened (the slow instance takes 5 s):\n%s", d.logs)
	}

	// The slow instance is still being swept: the attach waits for that
	// sweep, then starts the one shell.
	tm := d.attach(t, keyAdmin, slow, 80, 24)
	tm.roundTrip()
	if m := sessionMarkers(t, slow); len(m) != 1 || m[0] == old[slow] {
		t.Fatalf("%s after the attach: sessions %v (the old one was %s); want one, the new one", slow, m, old[slow])
	}

	eventually(t, "every old shell is ended", func() bool {
		for name, marker := range old {
			if slices.Contains(sessionMarkers(t, name), marker) {
				return false
			}
		}
		return true
	})
	swept := time.Since(start)
	eventually(t, "the sweep's summary line", func() bool { return strings.Contains(d.logs.String(), "start-up sweep done") })
	logs := d.logs.String()
	if c := strings.Count(logs, "start-up sweep done"); c != 1 {
		t.Errorf("%d summary lines, want 1", c)
	}
	for line := range strings.SplitSeq(logs, "\n") {
		if len(line) > 2048 {
			t.Errorf("a log line of %d bytes: %.300s...", len(line), line)
		}
	}
	if m := sessionMarkers(t, slow); len(m) != 1 {
		t.Errorf("%s at the end: sessions %v, want the one attached", slow, m)
	}
	t.Logf("%d instances: listening %s after the restart, no old shell left after %s", n,
		listening.Round(time.Millisecond), swept.Round(time.Millisecond))
}
