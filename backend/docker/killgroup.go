package docker

import (
	"context"
	"slices"
)

// maxKillBatch bounds the markers one kill exec carries (its command line
// stays far below ARG_MAX: a marker is at most 193 bytes).
const maxKillBatch = 256

// killBatch is the markers of Kill calls for one container that one kill
// exec ends together.
type killBatch struct {
	markers []string // appended to under Backend.kmu until the batch runs
	done    chan struct{}
	// Set before done is closed.
	procs []ended
	err   error
	// aborted: the context of the call that ran the batch ended; the
	// members whose own context is alive try again.
	aborted bool
}

// killLane runs one kill exec at a time in a container. While one runs,
// the Kill calls that arrive gather in pending batches, so that N sessions
// ending at once (a SIGTERM, an instance-wide reset) cost about two execs,
// not N concurrent ones each walking /proc. All fields are guarded by
// Backend.kmu except turn.
type killLane struct {
	turn    chan struct{} // holds a token while a batch runs
	pending []*killBatch  // not started yet; the last one takes new markers
	users   int           // calls in killGrouped; the lane is dropped at 0
}

// killGrouped ends the processes marked with marker in the container,
// sharing one kill exec with concurrent calls for the same container. It
// returns what the exec ended for this marker.
func (b *Backend) killGrouped(ctx context.Context, containerID, marker string) ([]ended, error) {
	for {
		procs, retry, err := b.killInLane(ctx, containerID, marker)
		if retry {
			continue
		}
		var own []ended
		for _, p := range procs {
			if p.Session == marker {
				own = append(own, p)
			}
		}
		return own, err
	}
}

func (b *Backend) killInLane(ctx context.Context, containerID, marker string) (procs []ended, retry bool, err error) {
	b.kmu.Lock()
	if b.lanes == nil {
		b.lanes = map[string]*killLane{}
	}
	l := b.lanes[containerID]
	if l == nil {
		l = &killLane{turn: make(chan struct{}, 1)}
		b.lanes[containerID] = l
	}
	l.users++
	var g *killBatch
	if n := len(l.pending); n > 0 && len(l.pending[n-1].markers) < maxKillBatch {
		g = l.pending[n-1]
	} else {
		g = &killBatch{done: make(chan struct{})}
		l.pending = append(l.pending, g)
	}
	g.markers = append(g.markers, marker)
	b.kmu.Unlock()
	defer func() {
		b.kmu.Lock()
		if l.users--; l.users == 0 {
			delete(b.lanes, containerID)
		}
		b.kmu.Unlock()
	}()

	select {
	case <-g.done:
		return g.procs, g.aborted && ctx.Err() == nil, g.err
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		// The batch may still run with this marker: no harm, the session
		// ends either way.
		return nil, false, ctx.Err()
	}
	defer func() { <-l.turn }()
	select {
	case <-g.done: // another member ran it before this one got the turn
		return g.procs, g.aborted && ctx.Err() == nil, g.err
	default:
	}
	b.kmu.Lock()
	l.pending = slices.DeleteFunc(l.pending, func(x *killBatch) bool { return x == g })
	markers := slices.Clone(g.markers)
	b.kmu.Unlock()

	g.procs, g.err = b.killMarked(ctx, containerID, markers...)
	g.aborted = ctx.Err() != nil
	close(g.done)
	return g.procs, false, g.err
}
