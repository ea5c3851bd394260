package docker

import (
	"context"
	"io"
	"strings"
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
// exits; destroy covers a container removed while running (docker rm -f).
// A pause is not among them: a paused container (docker pause, docker
// commit) keeps its processes, frozen, and its sessions (sessions/paused.go).
var goneActions = []events.Action{events.ActionDie, events.ActionDestroy}

// watchedActions are the container events Watch asks for: the gone ones,
// pause and unpause, and rename, after which a session follows the
// container's new name (its clients' authorization is checked against it).
var watchedActions = append([]events.Action{events.ActionRename, events.ActionPause, events.ActionUnPause}, goneActions...)

// Watch reports every container that dies or is removed (Gone), is paused
// or unpaused (Paused, Unpaused) or is renamed (Instance.Name is the new
// name), until ctx is done (it then
// returns nil). When the event stream drops it reconnects with exponential
// backoff (at most 5 s apart), asking the engine for the events since the
// last one seen, so none is lost or repeated while the engine keeps them.
// Once it is connected again after a failure it reports Reachable, so that
// kills that failed while the engine was away are retried at once. ev runs
// on Watch's goroutine.
func (b *Backend) Watch(ctx context.Context, ev func(sessions.InstanceEvent)) error {
	cur := cursor{since: time.Now()}
	backoff := watchMinBackoff
	for failed := false; ; failed = true {
		began := time.Now()
		err := b.watchOnce(ctx, &cur, ev, failed)
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
	key := string(m.Action) + " " + m.Actor.ID + " " + m.Actor.Attributes["name"]
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

func (b *Backend) watchOnce(ctx context.Context, cur *cursor, report func(sessions.InstanceEvent), reconnect bool) error {
	f := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)))
	for _, a := range watchedActions {
		f.Add("event", string(a))
	}
	if b.label != "" {
		f.Add("label", b.label)
	}
	// The SDK's Events reads the client's API version on its own goroutine
	// before negotiating it, racing with a concurrent first request that
	// negotiates (and writes it). A versioned request here negotiates first.
	if _, err := b.cli.ServerVersion(ctx); err != nil {
		return b.engineErr("docker version", err)
	}
	if reconnect {
		b.log.Info("docker: engine reachable again")
		report(sessions.InstanceEvent{Reachable: true})
	}
	sctx, cancel := context.WithCancel(ctx)
	msgs, errs := b.cli.Events(sctx, events.ListOptions{
		Since:   cur.since.Format(time.RFC3339Nano),
		Filters: f,
	})
	b.running.connected() // what Lookup finds may be remembered from now on
	defer func() {
		b.running.dropped() // events may be missed until the reconnect
		cancel()
		for range errs { // closed when the SDK's reader goroutine ends
		}
	}()
	for {
		select {
		case m := <-msgs:
			fresh := cur.fresh(m)
			ev, ok := instanceEvent(m)
			if ok {
				b.running.forget(ev.Instance.ID) // before the registry hears of it
			}
			if ok && fresh {
				report(ev)
			}
		case err, ok := <-errs:
			if !ok || err == nil {
				err = io.ErrUnexpectedEOF
			}
			return b.engineErr("docker events", err)
		}
	}
}

// instanceEvent translates a container event Watch reports. The engine
// gives the (new) name without the leading '/' of the API's names; trim it
// anyway, so that either form matches the name users ask for.
func instanceEvent(m events.Message) (sessions.InstanceEvent, bool) {
	if m.Type != events.ContainerEventType || m.Actor.ID == "" {
		return sessions.InstanceEvent{}, false
	}
	inst := sessions.Instance{Name: strings.TrimPrefix(m.Actor.Attributes["name"], "/"), ID: m.Actor.ID}
	switch m.Action {
	case events.ActionRename:
		return sessions.InstanceEvent{Instance: inst}, inst.Name != ""
	case events.ActionPause:
		return sessions.InstanceEvent{Instance: inst, Paused: true}, true
	case events.ActionUnPause:
		return sessions.InstanceEvent{Instance: inst, Unpaused: true}, true
	}
	for _, a := range goneActions {
		if m.Action == a {
			return sessions.InstanceEvent{Instance: inst, Gone: true}, true
		}
	}
	return sessions.InstanceEvent{}, false
}
