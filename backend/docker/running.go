package docker

import (
	"sync"

	"github.com/termgate/termgate/sessions"
)

// running remembers the containers Lookup found to be instances, so that a
// lookup of one the gateway already knows runs asks the engine nothing: a
// reattach to a live session no longer waits for an inspect (0.75–2 ms
// of a 3–8 ms reattach on the project's machine, see docs/PERFORMANCE.md).
//
// What Lookup checks can change only through an event that Watch asks the
// engine for: a container stops running (die, also before a restart), is
// paused, removed or renamed; its labels, ID and whether it is the
// gateway's own never change. So an entry is good from the inspect that
// found the container running until Watch hears of such an event for it,
// provided Watch's event stream is connected: entries are only made and
// used while it is, and all of them go when it drops (the events missed
// meanwhile come after the reconnect, too late for an entry made before).
// A new container can take a name only after its holder was renamed or
// removed, which drops the entry. What is left is the engine's own event
// delay: a lookup that comes between a container's stop and Watch hearing
// of it still finds the container, as an inspect made a moment earlier
// would; a shell started in it then fails as not found, and a live
// session there ends as its instance stops.
type running struct {
	mu       sync.Mutex // guards the fields below; no I/O under it
	watching int        // event streams connected (Watch)
	gen      uint64     // bumped by every event and every drop
	byName   map[string]sessions.Instance
	byID     map[string]string // ID -> name
}

// get returns the instance known to run under name.
func (r *running) get(name string) (sessions.Instance, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watching == 0 {
		return sessions.Instance{}, false
	}
	inst, ok := r.byName[name]
	return inst, ok
}

// begin is called before an inspect: put takes its answer only when no
// event came and the stream stayed up in between.
func (r *running) begin() (gen uint64, watching bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen, r.watching > 0
}

// put records inst, found running by an inspect that began at gen.
func (r *running) put(gen uint64, inst sessions.Instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watching == 0 || r.gen != gen {
		return // an event (maybe about inst) came during the inspect
	}
	if r.byName == nil {
		r.byName, r.byID = map[string]sessions.Instance{}, map[string]string{}
	}
	if old, ok := r.byID[inst.ID]; ok {
		delete(r.byName, old)
	}
	r.byName[inst.Name] = inst
	r.byID[inst.ID] = inst.Name
}

// forget drops the container id after an event about it.
func (r *running) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	if name, ok := r.byID[id]; ok {
		delete(r.byID, id)
		delete(r.byName, name)
	}
}

// connected is called once an event stream is open, dropped once it ends.
func (r *running) connected() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watching++
}

func (r *running) dropped() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watching--
	r.gen++
	r.byName, r.byID = nil, nil
}
