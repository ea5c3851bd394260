package procmark

import (
	"context"
	"slices"
	"sync"
	"time"
)

// MaxBatch bounds the markers one kill exec carries (its command line stays
// far below ARG_MAX: a marker is at most 193 bytes).
const MaxBatch = 256

// RunFunc runs KillScript once in the instance key for markers and returns
// what it ended. K is the caller's name of an instance (exechost's: its
// name and ID).
type RunFunc[K comparable] func(ctx context.Context, key K, markers []string) ([]Ended, error)

// Grouper shares kill execs between concurrent Kill calls: one exec at a
// time per instance, and the calls that arrive meanwhile gather in the next
// batch, so that N sessions ending at once (a SIGTERM, an instance-wide
// reset) cost about two execs, not N concurrent ones each walking /proc.
// The zero value is not usable: set Run.
type Grouper[K comparable] struct {
	Run RunFunc[K]

	mu    sync.Mutex           // guards lanes and their batches' markers
	lanes map[laneKey[K]]*lane // while a kill runs there
}

// laneKey names a lane: an instance key and the gathering time of its
// calls (0 for Kill), so that KillLater's batches stay apart from Kill's
// and an urgent kill never waits out another's gathering time.
type laneKey[K comparable] struct {
	key    K
	gather time.Duration
}

type batch struct {
	markers []string // appended to under Grouper.mu until the batch runs
	done    chan struct{}
	// Set before done is closed.
	procs []Ended
	err   error
	// aborted: the context of the call that ran the batch ended; the
	// members whose own context is alive try again.
	aborted bool
}

type lane struct {
	turn    chan struct{} // holds a token while a batch runs
	pending []*batch      // not started yet; the last one takes new markers
	users   int           // calls in Kill; the lane is dropped at 0
}

// Kill ends the processes marked with marker in the instance key, sharing
// one exec with concurrent calls for the same key. It returns what was
// ended for this marker.
func (g *Grouper[K]) Kill(ctx context.Context, key K, marker string) ([]Ended, error) {
	return g.kill(ctx, laneKey[K]{key: key}, marker)
}

// KillLater is Kill for what is not urgent (the jobs a command left behind
// once it exited): the exec runs gather after the first such call for key,
// with every marker that arrived meanwhile. Back-to-back commands (a
// script, Ansible) then cost one kill exec per gather, not one each racing
// the next command's exec for the engine.
func (g *Grouper[K]) KillLater(ctx context.Context, key K, marker string, gather time.Duration) ([]Ended, error) {
	return g.kill(ctx, laneKey[K]{key, gather}, marker)
}

func (g *Grouper[K]) kill(ctx context.Context, lk laneKey[K], marker string) ([]Ended, error) {
	for {
		procs, retry, err := g.killInLane(ctx, lk, marker)
		if retry {
			continue
		}
		var own []Ended
		for _, p := range procs {
			if p.Session == marker {
				own = append(own, p)
			}
		}
		return own, err
	}
}

func (g *Grouper[K]) killInLane(ctx context.Context, lk laneKey[K], marker string) (procs []Ended, retry bool, err error) {
	g.mu.Lock()
	if g.lanes == nil {
		g.lanes = map[laneKey[K]]*lane{}
	}
	l := g.lanes[lk]
	if l == nil {
		l = &lane{turn: make(chan struct{}, 1)}
		g.lanes[lk] = l
	}
	l.users++
	var bt *batch
	if n := len(l.pending); n > 0 && len(l.pending[n-1].markers) < MaxBatch {
		bt = l.pending[n-1]
	} else {
		bt = &batch{done: make(chan struct{})}
		l.pending = append(l.pending, bt)
	}
	bt.markers = append(bt.markers, marker)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		if l.users--; l.users == 0 {
			delete(g.lanes, lk)
		}
		g.mu.Unlock()
	}()

	select {
	case <-bt.done:
		return bt.procs, bt.aborted && ctx.Err() == nil, bt.err
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		// The batch may still run with this marker: no harm, the session
		// ends either way.
		return nil, false, ctx.Err()
	}
	defer func() { <-l.turn }()
	select {
	case <-bt.done: // another member ran it before this one got the turn
		return bt.procs, bt.aborted && ctx.Err() == nil, bt.err
	default:
	}
	if lk.gather > 0 {
		// Holding the turn, with the batch still pending: what arrives
		// meanwhile joins it.
		t := time.NewTimer(lk.gather)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	g.mu.Lock()
	l.pending = slices.DeleteFunc(l.pending, func(x *batch) bool { return x == bt })
	markers := slices.Clone(bt.markers)
	g.mu.Unlock()

	bt.procs, bt.err = g.Run(ctx, lk.key, markers)
	bt.aborted = ctx.Err() != nil
	close(bt.done)
	return bt.procs, false, bt.err
}

// Waiting reports how many Kill calls for key wait for an exec that has not
// started yet, and whether any kill is under way for key at all (tests
// observe the batching with it).
func (g *Grouper[K]) Waiting(key K) (markers int, busy bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.lanes[laneKey[K]{key: key}]
	if l == nil {
		return 0, false
	}
	for _, bt := range l.pending {
		markers += len(bt.markers)
	}
	return markers, true
}

// Busy reports whether a kill is under way for any key.
func (g *Grouper[K]) Busy() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.lanes) > 0
}
