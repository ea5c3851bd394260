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
	err    error
}

var errEnded = errors.New("ended")

func (t *takes) Ready() <-chan struct{} { return t.ready }

func (t *takes) Take(bufs [][]byte) ([][]byte, error) {
	if len(t.steps) == 0 {
		return bufs, errEnded
	}
	s := t.steps[0]
	t.steps = t.steps[1:]
	for _, c := range s.chunks {
		bufs = append(bufs, []byte(c))
	}
	return bufs, s.err
}

// The reader returns every byte in order across small reads, an in-band
// event once after the bytes taken with it, waits on Ready when Take has
// nothing, and repeats the final cause.
func TestClientReader(t *testing.T) {
	errReset := errors.New("reset")
	c := &takes{ready: make(chan struct{}, 1), steps: []step{
		{chunks: []string{"hello ", "world"}},
		{}, // nothing yet: the reader waits on Ready
		{chunks: []string{"!"}, err: errReset},
		{chunks: []string{"fresh"}},
	}}
	c.ready <- struct{}{}
	r := NewClientReader(c)
	var got []byte
	buf := make([]byte, 4)
	var err error
	for err == nil {
		var n int
		n, err = r.Read(buf)
		got = append(got, buf[:n]...)
	}
	if string(got) != "hello world!" || err != errReset {
		t.Fatalf("read %q, %v; want %q then the reset", got, err, "hello world!")
	}
	rest, err := io.ReadAll(r)
	if string(rest) != "fresh" || err != errEnded {
		t.Fatalf("after the reset: %q, %v; want %q and the cause", rest, err, "fresh")
	}
	if _, err := r.Read(buf); err != errEnded {
		t.Fatalf("read after the end: %v, want the cause again", err)
	}
}
