package sessions

import "testing"

// TestResumeDoesNotCompleteACutQuery: the client left after receiving the
// start of a query ("ESC ["); the program printed the rest ("6n") while no
// client was attached. The resume must not complete the query at the
// client's terminal (issue 9 item 1, the resume side).
func TestResumeDoesNotCompleteACutQuery(t *testing.T) {
	r, fb := newTestRegistry(t, Config{BufferSize: MinBufferSize})
	c := attach(t, r, "web1", AttachOptions{})
	p := fb.last()
	p.emit("$ \x1b[")
	readAtLeast(t, c, 4)
	c.Detach()
	p.emit("6n$ ")
	waitBytes(t, r, 8)

	c = attach(t, r, "web1", AttachOptions{Session: c.Info().Session, Since: 4})
	b, _ := readAtLeast(t, c, 3)
	if string(b) != "\x18$ " || c.Info().Gap {
		t.Fatalf("resume got %q (info %+v), want CAN cancelling the held ESC [ and then %q", b, c.Info(), "$ ")
	}
	c.Detach()
}
