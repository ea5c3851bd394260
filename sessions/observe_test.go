package sessions

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeObserver records what a session tells it.
type fakeObserver struct {
	start  ObservedSession
	mu     sync.Mutex
	events []string
	closed chan struct{}
}

func (o *fakeObserver) add(e string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}
func (o *fakeObserver) Output(b []byte)   { o.add("o:" + string(b)) }
func (o *fakeObserver) Resize(s Size)     { o.add(fmt.Sprintf("r:%dx%d", s.Cols, s.Rows)) }
func (o *fakeObserver) Close()            { o.add("close"); close(o.closed) }
func (o *fakeObserver) Recording() string { return o.start.Instance + "/" + o.start.Session + ".cast" }
func (o *fakeObserver) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.events, "|")
}

// Every session gets its own observer: it sees the output and the sizes
// applied, is closed when the session ends (a reset gives the new session
// a new observer), and names its recording in Info.
func TestObserverSeesOutputResizesAndEnd(t *testing.T) {
	var mu sync.Mutex
	var obs []*fakeObserver
	r, fb := newTestRegistry(t, Config{Observe: func(s ObservedSession) Observer {
		o := &fakeObserver{start: s, closed: make(chan struct{})}
		mu.Lock()
		obs = append(obs, o)
		mu.Unlock()
		return o
	}})
	c := attach(t, r, "web1", AttachOptions{Size: Size{Cols: 100, Rows: 30}, Term: "screen"})
	fb.last().emit("hello")
	readAtLeast(t, c, 5)
	if err := c.Resize(Size{Cols: 120, Rows: 40}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(obs[0].String(), "r:120x40") })
	fb.last().emit("after")
	readAtLeast(t, c, 5)
	c.Detach()
	c = attach(t, r, "web1", AttachOptions{}) // a reattach keeps the observer
	fb.last().emit("again")
	waitFor(t, func() bool { return strings.Contains(obs[0].String(), "o:again") })

	infos := r.Sessions()
	if len(infos) != 1 || infos[0].Recording != "web1/"+infos[0].Session+".cast" {
		t.Fatalf("Info.Recording: %+v", infos)
	}
	first := obs[0]
	if first.start.Size != (Size{Cols: 100, Rows: 30}) || first.start.Term != "screen" || first.start.Instance != "web1" || first.start.Session != infos[0].Session {
		t.Fatalf("observer started with %+v", first.start)
	}
	if _, err := r.Reset(context.Background(), "web1", "alice"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the reset session's observer was not closed")
	}
	if got, want := first.String(), "o:hello|r:120x40|o:after|o:again|close"; got != want {
		t.Fatalf("observer saw %q, want %q", got, want)
	}
	mu.Lock()
	n := len(obs)
	mu.Unlock()
	if n != 2 || obs[1].start.Session == first.start.Session || obs[1].start.Size != (Size{Cols: 120, Rows: 40}) {
		t.Fatalf("after the reset: %d observers, the new one %+v", n, obs[len(obs)-1].start)
	}
	_, _ = readErr(t, c)
}

// An adopted held session's observer learns that it is held, the byte
// number of the holder's replay and the replay itself, and Output then
// gets only what follows the replay (a recording continues from there).
func TestObserverOfAnAdoptedSessionGetsTheReplay(t *testing.T) {
	hb := newHeldBackend()
	hb.hold("web1", "feedc0de", 5000, "$ echo hi\r\nhi\r\n")
	obs := make(chan *fakeObserver, 1)
	r := newHeldRegistry(t, Config{Observe: func(s ObservedSession) Observer {
		o := &fakeObserver{start: s, closed: make(chan struct{})}
		obs <- o
		return o
	}}, hb)
	c := attach(t, r, "web1", AttachOptions{})
	o := <-obs
	if !o.start.Held || o.start.Offset != 5000 || string(o.start.Replay) != "$ echo hi\r\nhi\r\n" || o.start.Session != "feedc0de" {
		t.Fatalf("observer started with %+v", o.start)
	}
	hb.print("web1", "live")
	readAtLeast(t, c, c.Info().Replay+4)
	waitFor(t, func() bool { return o.String() == "o:live" })
}

// renameObserver is a recording that follows renames.
type renameObserver struct {
	fakeObserver
	name string // guarded by fakeObserver.mu
}

func (o *renameObserver) Rename(name string) {
	o.add("n:" + name)
	o.mu.Lock()
	o.name = name
	o.mu.Unlock()
}

func (o *renameObserver) Recording() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.name + "/" + o.start.Session + ".cast"
}

// TestObserverFollowsRename: issue 18 M2. A renamed instance's session
// tells its observer the new name (its recording moves there), and
// Info.Recording names the recording under the new name.
func TestObserverFollowsRename(t *testing.T) {
	var o *renameObserver
	r, fb := newTestRegistry(t, Config{Observe: func(s ObservedSession) Observer {
		o = &renameObserver{fakeObserver: fakeObserver{start: s, closed: make(chan struct{})}, name: s.Instance}
		return o
	}})
	attach(t, r, "web2", AttachOptions{})
	<-fb.watchOn
	fb.events(InstanceEvent{Instance: Instance{Name: "private", ID: "id-web2"}})
	waitFor(t, func() bool {
		got := r.Sessions()
		return len(got) == 1 && got[0].Instance == "private" && got[0].Recording == "private/"+got[0].Session+".cast"
	})
	if got := o.String(); !strings.Contains(got, "n:private") {
		t.Fatalf("observer saw %q, want the rename", got)
	}
}
