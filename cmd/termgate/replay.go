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
