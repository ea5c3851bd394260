package docker

import (
	"context"
	"io"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/termgate/termgate/sessions"
)

const (
	watchMinBackoff = 100 * time.Millisecond
	watchMaxBackoff = 5 * time.Second
)

// goneActions are the container events after which a container is no
// instance any more: die covers stop, kill, OOM and a main process that
// exits; destroy covers a container removed while running (docker rm -f);
// pause because a paused container is not running.
var goneActions = []events.Action{events.ActionDie, events.ActionDestroy, events.ActionPause}

// Watch calls gone for every container that dies, is removed or paused,
// until ctx is done (it then returns nil). When the event stream drops it
// reconnects with exponential backoff (at most 5 s apart), asking the engine
// for the events since the last one seen, so none is lost or repeated while
// the engine keeps them. gone runs on Watch's goroutine.
func (b *Backend) Watch(ctx context.Context, ev func(sessions.InstanceEvent)) error {
	gone := func(inst sessions.Instance) { ev(sessions.InstanceEvent{Instance: inst, Gone: true}) }
	cur := cursor{since: time.Now()}
	backoff := watchMinBackoff
	for {
		began := time.Now()
		err := b.watchOnce(ctx, &cur, gone)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(began) > watchMaxBackoff {
			backoff = watchMinBackoff
		}
		b.log.Warn("docker: event stream dropped; reconnecting", "err", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, watchMaxBackoff)
	}
}

// cursor remembers the last event seen, so that a reconnect resumes there
// without repeating it (the engine's since is inclusive).
type cursor struct {
	since time.Time
	nano  int64
	seen  map[string]bool // events at nano already handled
}

// fresh reports whether m has not been handled yet, and records it.
func (c *cursor) fresh(m events.Message) bool {
	key := string(m.Action) + " " + m.Actor.ID
	switch {
	case m.TimeNano < c.nano:
		return false
	case m.TimeNano > c.nano:
		c.nano, c.seen = m.TimeNano, map[string]bool{}
		c.since = time.Unix(0, m.TimeNano)
	case c.seen[key]:
		return false
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[key] = true
	return true
}

func (b *Backend) watchOnce(ctx context.Context, cur *cursor, gone func(sessions.Instance)) error {
	f := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)))
	for _, a := range goneActions {
		f.Add("event", string(a))
	}
	if b.label != "" {
		f.Add("label", b.label)
	}
	sctx, cancel := context.WithCancel(ctx)
	msgs, errs := b.cli.Events(sctx, events.ListOptions{
		Since:   cur.since.Format(time.RFC3339Nano),
		Filters: f,
	})
	defer func() {
		cancel()
		for range errs { // closed when the SDK's reader goroutine ends
		}
	}()
	for {
		select {
		case m := <-msgs:
			if !cur.fresh(m) || !isGone(m) {
				continue
			}
			gone(sessions.Instance{Name: m.Actor.Attributes["name"], ID: m.Actor.ID})
		case err, ok := <-errs:
			if !ok || err == nil {
				err = io.ErrUnexpectedEOF
			}
			return b.engineErr("docker events", err)
		}
	}
}

func isGone(m events.Message) bool {
	if m.Type != events.ContainerEventType {
		return false
	}
	for _, a := range goneActions {
		if m.Action == a {
			return true
		}
	}
	return false
}
