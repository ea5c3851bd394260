package main

import (
	"github.com/termgate/termgate/screen"
	"github.com/termgate/termgate/sessions"
)

// newReplayer picks what a (re)attaching client is sent first (--replay).
func newReplayer(o *options) sessions.NewReplayerFunc {
	if o.replay == "raw" {
		return nil // the sessions default: the raw ring
	}
	return screen.NewReplayerFunc(screen.Options{Scrollback: o.scrollback})
}

// clientQueue is sessions.Config.ClientQueue: its default (16 MiB), or
// more when a replay may be larger (a --buffer-size above it, or a screen
// snapshot of a large --scrollback: screen.SnapshotBound), so that a
// replay always fits the queue of the client it is for.
func clientQueue(o *options) int {
	q := max(16<<20, o.bufferSize)
	if o.replay != "raw" {
		q = max(q, screen.SnapshotBound(o.scrollback))
	}
	return q
}

// sizePolicy reads --size-policy (already checked against flagChoices).
func sizePolicy(s string) sessions.SizePolicy {
	p, _ := sessions.ParseSizePolicy(s)
	return p
}
