package sshd

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// floodChannel is a session channel the attacker opened and never
// started; gone is closed once the server closed it.
type floodChannel struct {
	ch   gossh.Channel
	gone chan struct{}
}

// openFlood opens n session channels on c without any request and returns
// the accepted ones and how many were refused.
func openFlood(t *testing.T, c *gossh.Client, n int) (accepted []floodChannel, refused int) {
	t.Helper()
	for range n {
		ch, reqs, err := c.OpenChannel("session", nil)
		if err != nil {
			if !strings.Contains(err.Error(), "resource shortage") {
				t.Fatalf("channel refused with %v, want a resource shortage", err)
			}
			refused++
			continue
		}
		fc := floodChannel{ch: ch, gone: make(chan struct{})}
		go func() {
			defer close(fc.gone)
			gossh.DiscardRequests(reqs) // ends when the channel is closed on both sides
		}()
		accepted = append(accepted, fc)
	}
	return accepted, refused
}

// TestChannelFloodBounded is issue 9 item 3: a key opens many session
// channels that never ask for a shell or command, some sending data. Every
// channel counts against the per-connection and per-key caps, channels
// that start nothing are closed, one that sends more than the inbox before
// starting is closed at once, and the gateway's heap stays bounded; a
// legitimate session on another connection keeps working.
func TestChannelFloodBounded(t *testing.T) {
	const startTimeout = 2 * time.Second
	f := newFixture(t, func(c *Config) { c.ChannelStartTimeout = startTimeout })
	legit := f.attach(t, "web", "web1", 80, 24)
	legit.pid()

	before := heapInUse()
	c1 := f.dial(t, "nopty", "web1")
	c2 := f.dial(t, "nopty", "web1")
	c3 := f.dial(t, "nopty", "web1")

	// Connection 1: channels that each send 2 MiB (x/crypto's whole
	// window) and never start.
	flood1, refused1 := openFlood(t, c1, 30)
	payload := bytes.Repeat([]byte("x"), 2<<20)
	var writers sync.WaitGroup
	for _, fc := range flood1 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			_, _ = fc.ch.Write(payload) // fails once the server closes the channel
		}()
	}
	// Connection 2: silent channels; connection 3: none left for the key.
	flood2, refused2 := openFlood(t, c2, 30)
	flood3, refused3 := openFlood(t, c3, 5)
	writers.Wait()
	grown := int64(heapInUse()) - int64(before)
	t.Logf("heap grew by %d KiB with %d+%d+%d channels accepted", grown>>10, len(flood1), len(flood2), len(flood3))

	if len(flood1) != 10 || refused1 != 20 || len(flood2) != 10 || refused2 != 20 {
		t.Errorf("accepted %d and %d channels on two connections (refused %d, %d); want 10 each (MaxChannelsPerConn)",
			len(flood1), len(flood2), refused1, refused2)
	}
	if len(flood3) != 0 || refused3 != 5 {
		t.Errorf("a third connection got %d channels with the key's 20 session slots taken", len(flood3))
	}
	// x/crypto holds what a channel sent within its 2 MiB window until the
	// pump has judged it (unstartedGrace): 20 MiB for the 10 channels.
	if grown > 32<<20 {
		t.Errorf("the gateway's heap grew by %d MiB while %d channels each sent 2 MiB and never started", grown>>20, len(flood1))
	}

	// Every flood channel is closed by the server: the ones that sent data
	// right away, the silent ones after the start timeout.
	deadline := time.After(startTimeout + 5*time.Second)
	for i, fc := range append(append(flood1, flood2...), flood3...) {
		select {
		case <-fc.gone:
		case <-deadline:
			t.Fatalf("channel %d (of %d) still open %v after it was opened without starting anything", i, len(flood1)+len(flood2), startTimeout+5*time.Second)
		}
	}
	if grown := int64(heapInUse()) - int64(before); grown > 8<<20 {
		t.Errorf("the gateway's heap is still %d MiB larger after the flood channels were closed", grown>>20)
	}
	// Their slots are free again: the key runs a command on connection 3.
	eventually(t, "the key's session slots to be released", func() bool {
		s, err := c3.NewSession()
		if err != nil {
			return false
		}
		// As web1@, help is a command for web1, which this fixture
		// refuses plainly: a session that ran.
		out, _ := s.CombinedOutput("help")
		return strings.Contains(string(out), "cannot run commands")
	})

	legit.send("echo ok-$((40+2))")
	legit.expect("ok-42")
	if !strings.Contains(f.logs.String(), "sent more than") || !strings.Contains(f.logs.String(), "asked for no shell or command within") {
		t.Errorf("the log does not say why the channels were closed")
	}
}

// TestAttachPasteArrivesWhole pastes more than the channel's inbox into a
// shell in raw mode: the inbox's flow control loses and reorders nothing.
func TestAttachPasteArrivesWhole(t *testing.T) {
	f := newFixture(t, nil)
	tm := f.attach(t, "admin", "web1", 80, 24)
	tm.pid()
	paste := make([]byte, 1<<20)
	if _, err := rand.Read(paste); err != nil {
		t.Fatal(err)
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	for i, b := range paste {
		paste[i] = alphabet[int(b)%len(alphabet)]
	}
	sum := sha256.Sum256(paste)
	// rea""dy: the echoed command line must not match.
	tm.send("stty raw -echo; echo rea\"\"dy; s=$(head -c " + strconv.Itoa(len(paste)) + " | sha256sum); stty sane; echo \"sum=${s%% *}\"")
	tm.expect("ready")
	if _, err := tm.stdin.Write(paste); err != nil {
		t.Fatal(err)
	}
	tm.expect("sum=" + hex.EncodeToString(sum[:]))
}
