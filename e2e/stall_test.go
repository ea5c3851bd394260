package e2e

import (
	"bytes"
	"encoding/json"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Contract, session semantics 8 (issue 34 item 3): a client that stops
// reading altogether while the shell prints (a frozen tab, a phone in a
// tunnel, an ssh stopped with ^Z) is brought forward when it reads again,
// within the liveness timeout (60 s): the gateway does not close it, and
// neither the shell nor the other clients wait for it. Before, the
// WebSocket one was closed with 1013 after the 10 s write timeout.
func TestClientThatStallsIsBroughtForward(t *testing.T) {
	t.Parallel()
	// Both stall for 20 s: in parallel they cost 20 s together.
	t.Run("websocket", func(t *testing.T) { t.Parallel(); stallWebSocket(t) })
	t.Run("openssh", func(t *testing.T) { t.Parallel(); stallOpenSSH(t) })
}

const (
	// stallFor is how long the client reads nothing: past the WebSocket
	// write timeout (10 s), within the liveness timeout (60 s).
	stallFor = 20 * time.Second
	// stallPrinted is how much the shell prints at least during the
	// stall: more than the gateway's client queue (16 MiB), the socket
	// buffers and the SSH window hold together, so the client falls
	// behind.
	stallPrinted = 40_000_000
	// stopFile ends printLoop.
	stopFile = "/tmp/stop-stall"
)

// printLoop prints about 4 MB/s until stopFile exists, then STOPPED.
const printLoop = "while [ ! -e " + stopFile + " ]; do head -c 200000 /dev/zero | tr '\\0' y; sleep 0.05; done; echo STOP''PED\n"

// stall waits stallFor, and longer if need be until the shell printed
// stallPrinted bytes since from (a loaded host prints slower), and
// returns the session's output count then.
func stall(t *testing.T, g *gateway, name string, from int64) int64 {
	t.Helper()
	time.Sleep(stallFor) // the scenario: a client that reads nothing for this long
	var s sessionInfo
	eventually(t, "the shell to print while the client is stalled", func() bool {
		s, _ = g.session(t, name)
		return s.BytesOut-from >= stallPrinted
	})
	return s.BytesOut
}

// stallEvent is a WebSocket event with the skipped event's fields.
type stallEvent struct {
	Type    string `json:"type"`
	Offset  int64  `json:"offset"`
	Bytes   int64  `json:"bytes"`
	Replay  int    `json:"replay"`
	Message string `json:"message"`
}

// stalledWS is a WebSocket client that reads only when the test says so.
type stalledWS struct {
	t    *testing.T
	conn *websocket.Conn
}

// next reads the next frame; a read error (the gateway closed it) fails
// the test.
func (w *stalledWS) next() (int, []byte) {
	w.t.Helper()
	_ = w.conn.SetReadDeadline(time.Now().Add(waitFor))
	typ, data, err := w.conn.ReadMessage()
	if err != nil {
		w.t.Fatalf("the stalled websocket client: %v, want it still attached", err)
	}
	if typ == websocket.TextMessage {
		var ev stallEvent
		if err := json.Unmarshal(data, &ev); err != nil || ev.Type == "error" {
			w.t.Fatalf("the stalled websocket client got %s", data)
		}
	}
	return typ, data
}

// event reads until an event of type typ and returns it and how many
// output bytes came before it.
func (w *stalledWS) event(typ string) (stallEvent, int) {
	w.t.Helper()
	n := 0
	for {
		mt, data := w.next()
		if mt == websocket.BinaryMessage {
			n += len(data)
			continue
		}
		var ev stallEvent
		_ = json.Unmarshal(data, &ev)
		if ev.Type == typ {
			return ev, n
		}
	}
}

// output reads until word is in the output and returns the first output
// frame it read. It keeps only a tail: a stalled client may have megabytes
// to read first.
func (w *stalledWS) output(word string) (first []byte) {
	w.t.Helper()
	var tail []byte
	for {
		mt, data := w.next()
		if mt != websocket.BinaryMessage {
			continue
		}
		if first == nil {
			first = data
		}
		tail = append(tail, data...)
		if bytes.Contains(tail, []byte(word)) {
			return first
		}
		tail = tail[max(0, len(tail)-len(word)):]
	}
}

func (w *stalledWS) send(s string) {
	w.t.Helper()
	if err := w.conn.WriteMessage(websocket.BinaryMessage, []byte(s)); err != nil {
		w.t.Fatalf("the stalled websocket client: type %q: %v", s, err)
	}
}

// stallWebSocket: a WebSocket client (gorilla) reads nothing for 20 s while
// the shell prints 40 MB or more; then it reads: the skipped event, the
// current screen, then the live output of a command it types. Another
// client that reads all along gets every byte meanwhile.
func stallWebSocket(t *testing.T) {
	g := newGateway(t, options{containers: []string{"web-stallws"}})
	name := g.name("web-stallws")
	other := g.ws(t, tokAdmin, name)
	d := websocket.Dialer{HandshakeTimeout: waitFor}
	conn, resp, err := d.Dial(g.wsURL(name, ""), bearer(g.tokens[tokAdmin]))
	if err != nil {
		t.Fatalf("websocket to %s: %v (%s)", name, err, describeResponse(resp))
	}
	t.Cleanup(func() { _ = conn.Close() })
	st := &stalledWS{t: t, conn: conn}
	st.event("attached")
	g.waitClients(t, name, 2)

	st.send(printLoop)
	other.expect(`yyyy`)
	s0, _ := g.session(t, name)
	got0 := other.out.Len()
	printed := stall(t, g, name, s0.BytesOut) - s0.BytesOut
	if s := g.waitClients(t, name, 2); s.Clients != 2 {
		t.Fatalf("%d clients after the stall, want both", s.Clients)
	}
	// The other client was not held back: it has what was printed (at
	// least what the stalled one's queue could not have held).
	eventually(t, "the reading client to get the output printed during the stall", func() bool {
		return int64(other.out.Len()-got0) >= printed-16<<20
	})
	for _, ev := range other.pendingEvents() {
		if ev.Type == "error" || ev.Type == "skipped" {
			t.Fatalf("the client that reads got %s during the other's stall", ev.raw)
		}
	}
	other.seen = other.out.Len()
	dockerExec(t, name, "touch "+stopFile)
	other.expect(`STOPPED`)

	// It reads again: what was in flight, the skipped event, the screen.
	sk, before := st.event("skipped")
	if sk.Bytes <= 0 || sk.Replay <= 0 || sk.Offset <= 0 {
		t.Fatalf("skipped event %+v, want the bytes it missed and the redraw that follows", sk)
	}
	if first := st.output("STOPPED"); first[0] != 0x18 {
		t.Fatalf("after the skipped event %q, want the redraw (CAN, then the screen)", first[:min(len(first), 40)])
	}
	cmd, word := marker("stallws")
	other.seen = other.out.Len()
	st.send(cmd + "\r")
	st.output(word)
	other.expect(regexp.QuoteMeta(word))
	if s := g.waitClients(t, name, 2); s.Clients != 2 {
		t.Fatalf("%d clients after the catch-up, want both", s.Clients)
	}
	t.Logf("stalled %v; %d bytes printed meanwhile; it got %d bytes before the skipped event, skipped %d", stallFor, printed, before, sk.Bytes)
}

// stallOpenSSH: an OpenSSH client (ssh -tt) stopped with SIGSTOP for 20 s
// while the shell prints 40 MB or more, then continued: it gets the redraw
// and the one-line [termgate] notice, and the output of a later command,
// in the same shell.
func stallOpenSSH(t *testing.T) {
	sshBin := needOpenSSH(t)
	g := newGateway(t, options{containers: []string{"web-stallssh"}})
	name := g.name("web-stallssh")
	r := g.opensshWithin(t, stallFor+3*waitFor, sshBin, t.TempDir(), "-tt", name+"@127.0.0.1")
	r.typeIn("echo PID=$$\n")
	pid := r.expect(`PID=(\d+)`)[1]
	r.typeIn(printLoop)
	r.expect(`yyyy`)
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	s0, _ := g.session(t, name)
	printed := stall(t, g, name, s0.BytesOut) - s0.BytesOut
	if s := g.waitClients(t, name, 1); s.Clients != 1 {
		t.Fatalf("%d clients after the stall, want the stopped ssh", s.Clients)
	}
	dockerExec(t, name, "touch "+stopFile)
	r.seen = r.out.Len() // what it read before it stopped
	if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	m := r.expect(`\[termgate\] fell behind the output: skipped ([0-9.]+ [KM]?B) to catch up`)
	r.typeIn("echo PID=$$\n")
	if again := r.expect(`PID=(\d+)`)[1]; again != pid {
		t.Fatalf("after the stall the shell is %s, want %s", again, pid)
	}
	cmd, word := marker("stallssh")
	r.typeIn(cmd + "\n")
	r.expect(regexp.QuoteMeta(word))
	if s := g.waitClients(t, name, 1); s.Clients != 1 {
		t.Fatalf("%d clients after the catch-up, want 1", s.Clients)
	}
	t.Logf("ssh stopped %v; %d bytes printed meanwhile; skipped %s", stallFor, printed, m[1])
}
