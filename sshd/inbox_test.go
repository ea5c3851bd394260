package sshd

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// chanFake is the client side of a channel for the inbox's pump: each
// send is one Read.
type chanFake struct {
	gossh.Channel
	data chan string
}

func (c *chanFake) Read(p []byte) (int, error) {
	s, ok := <-c.data
	if !ok {
		return 0, io.EOF
	}
	return copy(p, s), nil
}

// TestInboxDeliversTypedAheadInputFirst: what the client typed before the
// relay took over is written first, then what the pump reads, in order,
// with none lost; after stopDelivery the sink gets nothing more.
func TestInboxDeliversTypedAheadInputFirst(t *testing.T) {
	in := newInbox()
	ch := &chanFake{data: make(chan string)}
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		in.pump(ch, func() { t.Error("abuse reported") })
	}()
	if !in.start() {
		t.Fatal("start refused")
	}
	ch.data <- "typed "
	ch.data <- "ahead "
	deadline := time.Now().Add(5 * time.Second)
	for { // the pump has queued both
		in.mu.Lock()
		n := len(in.buf)
		in.mu.Unlock()
		if n == len("typed ahead ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pump did not queue the typed-ahead data")
		}
		time.Sleep(time.Millisecond)
	}
	var mu sync.Mutex
	var got strings.Builder
	sink := func(p []byte) { mu.Lock(); got.Write(p); mu.Unlock() }
	if in.deliverTo(sink) {
		t.Fatal("deliverTo took over with typed-ahead data queued")
	}
	in.deliverQueued(sink)
	ch.data <- "then live"
	want := "typed ahead then live"
	for {
		mu.Lock()
		s := got.String()
		mu.Unlock()
		if s == want {
			break
		}
		if time.Now().After(deadline) || !strings.HasPrefix(want, s) {
			t.Fatalf("delivered %q, want %q", s, want)
		}
		time.Sleep(time.Millisecond)
	}
	in.stopDelivery()
	in.setDiscard()
	ch.data <- "after the relay"
	close(ch.data)
	<-pumped
	if s := got.String(); s != want {
		t.Fatalf("after stopDelivery the sink got more: %q", s)
	}
}
