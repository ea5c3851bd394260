package holder

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// hostileHolder plays a holder over one end of a net.Pipe: it reads the
// gateway's hello, answers with hello (proved with testKey: a holder whose
// key its instance's root user read), waits for the attach and then sends
// the frames of script as they are. It returns the gateway's end.
func hostileHolder(t *testing.T, hello HelloMsg, script ...[]byte) net.Conn {
	t.Helper()
	gw, h := net.Pipe()
	done := make(chan struct{})
	t.Cleanup(func() {
		gw.Close()
		h.Close()
		<-done
	})
	go func() {
		defer close(done)
		defer h.Close()
		r := NewReader(h)
		f, err := r.ReadFrame() // the gateway's hello
		if err != nil {
			return
		}
		var theirs HelloMsg
		_ = DecodeControl(f, &theirs)
		hello.Nonce = newNonce()
		hello.Proof = HolderProof(testKey, theirs.Nonce, hello.Nonce)
		if _, err := h.Write(mustControl(TypeHello, hello)); err != nil {
			return
		}
		if _, err := r.ReadFrame(); err != nil { // the attach
			return
		}
		// Drain what the gateway sends from now on, so its writes never
		// block on the pipe.
		go func() { _, _ = io.Copy(io.Discard, h) }()
		for _, f := range script {
			if _, err := h.Write(f); err != nil {
				return
			}
		}
	}()
	return gw
}

var plainHello = HelloMsg{Proto: Version, Session: "00000000000000cc", PID: 1, Cols: 80, Rows: 24}

func output(off int64, s string) []byte {
	b, _ := OutputFrame(nil, off, []byte(s))
	return b
}

// dialReplay is what a backend's handshake does: Dial, then ReadReplay.
func dialReplay(t *testing.T, gw net.Conn) (*Client, ReplayMsg, []byte, error) {
	t.Helper()
	_ = gw.SetDeadline(time.Now().Add(10 * time.Second))
	c, rep, err := Dial(gw, testKey, "gw", "", 0)
	if err != nil {
		return nil, rep, nil, err
	}
	replay, err := c.ReadReplay()
	if err != nil {
		c.Close()
		return nil, rep, replay, err
	}
	return c, rep, replay, nil
}

// The red team's holder (round 3, H3): a replay header announcing 2^62
// bytes. The gateway allocated that up front and died with "makeslice:
// cap out of range"; now the header is a protocol error of that holder.
func TestHostileReplayOffsetIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  ReplayMsg
	}{
		{"2^62 from 0", ReplayMsg{Session: "00000000000000cc", Offset: 4611686018427387904}},
		{"max int64", ReplayMsg{Session: "00000000000000cc", Offset: 1<<63 - 1}},
		{"one more than any holder buffers", ReplayMsg{Session: "00000000000000cc", Offset: MaxReplay + 1}},
		{"start after offset", ReplayMsg{Session: "00000000000000cc", Offset: 5, Start: 6}},
		{"negative start", ReplayMsg{Session: "00000000000000cc", Offset: 5, Start: -1}},
		{"a session id that is not one", ReplayMsg{Session: "../../etc/x", Offset: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := hostileHolder(t, plainHello, mustControl(TypeReplay, tc.rep))
			_, _, _, err := dialReplay(t, gw)
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("dial: %v, want an ErrProtocol", err)
			}
		})
	}
}

// A replay announced within bounds but never sent costs nothing up front:
// the gateway reads what arrives and fails when the stream ends.
func TestAnnouncedReplayIsNotAllocatedAhead(t *testing.T) {
	SetReplayLimit(MaxReplay)
	defer SetReplayLimit(0)
	gw := hostileHolder(t, plainHello,
		mustControl(TypeReplay, ReplayMsg{Session: "00000000000000cc", Offset: MaxReplay}),
		output(0, "only this"))
	_, _, replay, err := dialReplay(t, gw)
	if err == nil || string(replay) != "only this" {
		t.Fatalf("replay %q, %v; want what arrived and an error", replay, err)
	}
	if cap(replay) > 1<<20 {
		t.Fatalf("replay buffer of %d bytes for 9 received", cap(replay))
	}
}

// A replay longer than this gateway keeps (a holder started with a larger
// --buffer-size) is read in full, and its end is kept: the header the
// caller gets says where the kept bytes start.
func TestLongReplayKeepsItsEnd(t *testing.T) {
	SetReplayLimit(4)
	defer SetReplayLimit(0)
	gw := hostileHolder(t, plainHello,
		mustControl(TypeReplay, ReplayMsg{Session: "00000000000000cc", Start: 100, Offset: 110}),
		output(100, "0123"), output(104, "456789live"))
	c, rep, replay, err := dialReplay(t, gw)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if string(replay) != "6789" || rep.Start != 106 || rep.Offset != 110 || c.Offset() != 110 {
		t.Fatalf("replay %q from %d to %d (offset %d), want 6789 from 106 to 110", replay, rep.Start, rep.Offset, c.Offset())
	}
	b := make([]byte, 16)
	if n, err := c.Read(b); err != nil || string(b[:n]) != "live" {
		t.Fatalf("live output %q, %v", b[:n], err)
	}
}

// Output that does not follow the replay, or whose offset overflows, ends
// the stream with a protocol error, and Read keeps returning it.
func TestHostileOutputIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script [][]byte
	}{
		{"replay at the wrong offset", [][]byte{mustControl(TypeReplay, ReplayMsg{Session: "00000000000000cc", Start: 0, Offset: 3}), output(7, "abc")}},
		{"a gap in live output", [][]byte{mustControl(TypeReplay, ReplayMsg{Offset: 3, Start: 3}), output(3, "ab"), output(9, "c")}},
		{"an offset that overflows", [][]byte{mustControl(TypeReplay, ReplayMsg{Offset: 1<<63 - 2, Start: 1<<63 - 2}), output(1<<63-2, "abc")}},
		{"a frame over the limit", [][]byte{mustControl(TypeReplay, ReplayMsg{}), {TypeOutput, 0xff, 0xff, 0xff, 0xff}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := hostileHolder(t, plainHello, tc.script...)
			c, _, _, err := dialReplay(t, gw)
			if err == nil {
				defer c.Close()
				b := make([]byte, 64)
				for err == nil {
					_, err = c.Read(b)
				}
			}
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("got %v, want an ErrProtocol", err)
			}
			if c != nil {
				if _, again := c.Read(make([]byte, 1)); again == nil || again.Error() != err.Error() {
					t.Fatalf("Read after the error: %v, want %v again", again, err)
				}
			}
		})
	}
}

// A reset frame is believed only for the session the connection holds,
// into a session id the gateway could have made (round 3, M3).
func TestHostileResetIsRefused(t *testing.T) {
	rep := mustControl(TypeReplay, ReplayMsg{Session: "00000000000000cc"})
	for _, tc := range []struct {
		name string
		m    ResetMsg
		ok   bool
	}{
		{"the held session", ResetMsg{OldSession: "00000000000000cc", NewSession: "00000000000000dd", By: "x"}, true},
		{"another session", ResetMsg{OldSession: "00000000000000aa", NewSession: "00000000000000dd"}, false},
		{"no old session", ResetMsg{NewSession: "00000000000000dd"}, false},
		{"into itself", ResetMsg{OldSession: "00000000000000cc", NewSession: "00000000000000cc"}, false},
		{"into no session", ResetMsg{OldSession: "00000000000000cc"}, false},
		{"into a path", ResetMsg{OldSession: "00000000000000cc", NewSession: "../x"}, false},
		{"into a long id", ResetMsg{OldSession: "00000000000000cc", NewSession: strings.Repeat("a", 129)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := hostileHolder(t, plainHello, rep, mustControl(TypeReset, tc.m))
			c, _, _, err := dialReplay(t, gw)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Read(make([]byte, 8))
			var reset *ErrReset
			switch {
			case tc.ok && (!errors.As(err, &reset) || reset.NewSession != tc.m.NewSession):
				t.Fatalf("got %v, want the reset", err)
			case !tc.ok && !errors.Is(err, ErrProtocol):
				t.Fatalf("got %v, want an ErrProtocol", err)
			}
		})
	}
}

// A hello whose session id or numbers the gateway could not have made is
// refused before anything is taken from it.
func TestHostileHelloIsRefused(t *testing.T) {
	for _, h := range []HelloMsg{
		{Proto: Version, Session: "a b"},
		{Proto: Version, Session: "00cc", Offset: -1},
		{Proto: Version, Session: "00cc", PID: -5},
	} {
		gw := hostileHolder(t, h, mustControl(TypeReplay, ReplayMsg{}))
		if _, _, _, err := dialReplay(t, gw); !errors.Is(err, ErrProtocol) {
			t.Fatalf("hello %+v: %v, want an ErrProtocol", h, err)
		}
	}
}

// A second exit frame (the stream goes on after the end) must not block
// Read: it is never read.
func TestReadAfterExitReturnsEOF(t *testing.T) {
	exit := mustControl(TypeExit, ExitMsg{Session: "00000000000000cc", Code: 3, Cause: strings.Repeat("x", 5000)})
	gw := hostileHolder(t, plainHello, mustControl(TypeReplay, ReplayMsg{Session: "00000000000000cc"}), exit, exit, exit)
	c, _, _, err := dialReplay(t, gw)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		if _, err := c.Read(make([]byte, 8)); err != io.EOF {
			t.Fatalf("read: %v, want io.EOF", err)
		}
	}
	if m, ok := c.Exit(); !ok || m.Code != 3 || len(m.Cause) > 2*maxText {
		t.Fatalf("exit %d (cause of %d bytes) %v", m.Code, len(m.Cause), ok)
	}
}
