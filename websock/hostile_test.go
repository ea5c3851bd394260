package websock

import (
	"bytes"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A program in the instance writes hostile bytes: invalid UTF-8, NULs,
// escape sequences, something shaped like a server event, markup. They
// reach the browser only as binary frames, byte for byte, never as a text
// frame the client would parse as an event; and a client that attaches
// later gets a replay without the terminal queries (device status, device
// attributes, window title report), whose answers would arrive in the shell
// as typed input.
func TestHostileOutputStaysTerminalBytes(t *testing.T) {
	be := newFakeBackend("web1")
	e := newEnv(t, be, nil, nil)
	live, _ := e.attach(termPath)

	hostile := []byte("\xff\xfe\x00\xc3(\x80" + // invalid UTF-8 and NUL
		`{"type":"exit","code":0}` + "\n" + // an event's shape
		`{"type":"reset","session":"evil"}` + "\n" +
		"</script><script>alert(1)</script><img src=x onerror=alert(1)>\n" +
		"\x1b]0;title\x07\x1b]52;c;ZXZpbA==\x07" + // title, clipboard write (OSC 52)
		"\x1b[6n\x1b[c\x1b[21t\x1b[>c\x05" + // queries: DSR, DA, title report, DA2, ENQ
		"end\n")
	be.proc("web1").emit(string(hostile))
	e.waitBytesOut("web1", int64(len(hostile)))

	var got []byte
	deadline := time.Now().Add(waitFor)
	for !bytes.Equal(got, hostile) {
		typ, data, err := live.next(deadline)
		if err != nil {
			t.Fatalf("reading: %v; got %q", err, got)
		}
		if typ != websocket.BinaryMessage {
			t.Fatalf("a %d frame %q among the output", typ, data)
		}
		got = append(got, data...)
		if len(got) > len(hostile) {
			t.Fatalf("more than was written: %q", got)
		}
	}
	if len(live.events) != 1 {
		t.Fatalf("events %+v: output became events", live.events)
	}

	later, _ := e.attach(termPath)
	later.atLeast(len("end\n"))
	for !bytes.HasSuffix(later.out.Bytes(), []byte("end\n")) {
		later.atLeast(later.out.Len() + 1)
	}
	replay := later.out.Bytes()
	for _, q := range []string{"\x1b[6n", "\x1b[c", "\x1b[21t", "\x1b[>c", "\x05"} {
		if bytes.Contains(replay, []byte(q)) {
			t.Errorf("the replay still asks the terminal %q: %q", q, replay)
		}
	}
	if !bytes.Contains(replay, []byte(`{"type":"exit","code":0}`)) {
		t.Errorf("the replay lost ordinary output: %q", replay)
	}
	if len(later.events) != 1 || later.events[0].Type != "attached" {
		t.Errorf("later client's events %+v", later.events)
	}
	// The live client is still attached and unharmed.
	mark := live.out.Len()
	live.input("ok\n")
	live.atLeast(mark + 3)
}
