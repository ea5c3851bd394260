package termtest

import (
	"errors"
	"io"
	"testing"
)

// takes is a Taker that returns its steps in order, then ended forever.
type takes struct {
	steps []step
	ready chan struct{}
}

type step struct {
	chunks []string
	ev     string
	err    error
}

var errEnded = errors.New("ended")

func (t *takes) Ready() <-chan struct{} { return t.ready }

func (t *takes) Take(bufs [][]byte) ([][]byte, string, error) {
	if len(t.steps) == 0 {
		return bufs, "", errEnded
	}
	s := t.steps[0]
	t.steps = t.steps[1:]
	for _, c := range s.chunks {
		bufs = append(bufs, []byte(c))
	}
	return bufs, s.ev, s.err
}

// The reader returns every byte in order across small reads and across an
// in-band event, which it records once, after the bytes taken with it;
// it waits on Ready when Take has nothing, and repeats the final cause.
func TestClientReader(t *testing.T) {
	c := &takes{ready: make(chan struct{}, 1), steps: []step{
		{chunks: []string{"hello ", "world"}},
		{}, // nothing yet: the reader waits on Ready
		{chunks: []string{"!"}, ev: "reset"},
		{chunks: []string{"fresh"}},
	}}
	c.ready <- struct{}{}
	r := NewClientReader[string](c)
	var got []byte
	buf := make([]byte, 4)
	for len(got) < len("hello world!") {
		if len(r.Events()) > 0 {
			t.Fatalf("event %v before the bytes taken with it were taken (read %q)", r.Events(), got)
		}
		n, err := r.Read(buf)
		if err != nil {
			t.Fatalf("read %q, then %v", got, err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "hello world!" {
		t.Fatalf("read %q, want %q", got, "hello world!")
	}
	rest, err := io.ReadAll(r)
	if string(rest) != "fresh" || err != errEnded {
		t.Fatalf("after the reset: %q, %v; want %q and the cause", rest, err, "fresh")
	}
	if ev := r.Events(); len(ev) != 1 || ev[0] != "reset" {
		t.Fatalf("events %q, want the reset once", ev)
	}
	if _, err := r.Read(buf); err != errEnded {
		t.Fatalf("read after the end: %v, want the cause again", err)
	}
}
