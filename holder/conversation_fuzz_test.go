package holder

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// scriptedStream is a holder's side of a connection, read from a script;
// what the gateway writes is dropped. A holder with the key answers the
// gateway's fresh nonce, which no script can know: so when the script's
// first frame is a hello, its proof is made for the gateway's nonce (from
// the gateway's hello, written before the script is read) and the
// hello's own nonce, with testKey. The rest is read as it is.
type scriptedStream struct {
	script  []byte
	r       *bytes.Reader
	gwNonce string
}

func (s *scriptedStream) Read(b []byte) (int, error) {
	if s.r == nil {
		s.r = bytes.NewReader(proveScript(s.script, s.gwNonce))
	}
	return s.r.Read(b)
}

func (s *scriptedStream) Write(b []byte) (int, error) {
	if s.gwNonce == "" {
		if f, err := NewReader(bytes.NewReader(b)).ReadFrame(); err == nil && f.Type == TypeHello {
			var h HelloMsg
			if DecodeControl(f, &h) == nil {
				s.gwNonce = h.Nonce
			}
		}
	}
	return len(b), nil
}

func (s *scriptedStream) Close() error { return nil }

// proveScript gives the script's first frame, when it is a hello, the
// proof for the gateway's nonce gwNonce.
func proveScript(script []byte, gwNonce string) []byte {
	// Parsed in place: a frame read here would cost what the gateway's
	// read of it costs, which the fuzz bounds.
	if len(script) < headerLen || script[0] != TypeHello {
		return script
	}
	n := int64(binary.BigEndian.Uint32(script[1:headerLen]))
	if n > int64(len(script)-headerLen) {
		return script
	}
	var h HelloMsg
	if DecodeControl(Frame{Type: TypeHello, Payload: script[headerLen : headerLen+n]}, &h) != nil {
		return script
	}
	h.Proof = HolderProof(testKey, gwNonce, h.Nonce)
	b, err := ControlFrame(TypeHello, h)
	if err != nil {
		return script
	}
	return append(b, script[headerLen+n:]...)
}

// fuzzReplayLimit is the gateway's --buffer-size in the conversation fuzz.
const fuzzReplayLimit = 64 << 10

// conversation plays the gateway's whole side of one connection against
// the holder's bytes b, as a backend and the registry do: hello, replay,
// then live output until the stream ends, with resizes, client counts,
// input and a reset request sent along the way. It returns how the
// connection ended (nil: it did not get past the replay).
func conversation(b []byte) (replay []byte, end error) {
	c, rep, err := DialClients(&scriptedStream{script: b}, testKey, "gw", "00000000000000cc", 7, 1)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if rep.Offset-rep.Start > fuzzReplayLimit || rep.Start < 0 {
		panic("the replay header the caller gets exceeds the limit")
	}
	replay, err = c.ReadReplay()
	if err != nil {
		return replay, err
	}
	if int64(len(replay)) != rep.Offset-rep.Start || c.Offset() != rep.Offset {
		panic("the replay does not match its header")
	}
	buf := make([]byte, 4096)
	for i := 0; ; i++ {
		switch i % 4 {
		case 0:
			_ = c.Resize(context.Background(), 80+i%100, 24)
		case 1:
			_ = c.Clients(i % 3)
		case 2:
			_, _ = c.Write([]byte("ls\r"))
		case 3:
			_ = c.Reset("00000000000000dd", "gw")
		}
		off := c.Offset()
		n, err := c.Read(buf)
		if c.Offset() != off+int64(n) {
			panic("Offset does not follow Read")
		}
		if err != nil {
			var reset *ErrReset
			if errors.As(err, &reset) && (reset.OldSession != rep.Session || checkSessionID("", reset.NewSession) != nil || reset.NewSession == "") {
				panic("an unchecked reset got through")
			}
			return replay, err
		}
	}
}

// seedNonce is the seeds' holder nonce.
const seedNonce = "000102030405060708090a0b0c0d0e0f"

// seedConversation is a holder's side: hello, the replay header rep and
// its bytes (none when it announces more than 1 KiB: tail has them, or
// not), then tail.
func seedConversation(rep ReplayMsg, tail ...[]byte) []byte {
	var b []byte
	b = append(b, mustControl(TypeHello, HelloMsg{Proto: Version, Session: "00000000000000cc", PID: 9, Cols: 80, Rows: 24, Nonce: seedNonce})...)
	b = append(b, mustControl(TypeReplay, rep)...)
	for off := rep.Start; off < rep.Offset && rep.Offset-rep.Start <= 1<<10; {
		n := min(rep.Offset-off, 5)
		b, _ = OutputFrame(b, off, bytes.Repeat([]byte("r"), int(n)))
		off += n
	}
	for _, t := range tail {
		b = append(b, t...)
	}
	return b
}

// FuzzHolderConversation feeds arbitrary bytes as the holder's side of a
// whole connection to the gateway's side (Client: hello, replay, output,
// resize, clients, reset and exit frames): nothing may panic, the replay
// kept never exceeds the limit, and what the gateway allocates is bounded
// by what the holder actually sent, never by what it announced.
func FuzzHolderConversation(f *testing.F) {
	f.Add(seedConversation(ReplayMsg{Session: "00000000000000cc", Start: 3, Offset: 17},
		output(17, "live"),
		mustControl(TypeError, ErrorMsg{Message: "bad size"}),
		mustControl(TypeReset, ResetMsg{OldSession: "00000000000000cc", NewSession: "00000000000000dd", By: "x"})))
	f.Add(seedConversation(ReplayMsg{Session: "00000000000000cc", Offset: 4611686018427387904}))
	f.Add(seedConversation(ReplayMsg{Session: "00000000000000cc", Offset: 1 << 30}, output(0, "x")))
	f.Add(seedConversation(ReplayMsg{Session: "00000000000000cc"}, mustControl(TypeExit, ExitMsg{Code: 1}), mustControl(TypeExit, ExitMsg{Code: 2})))
	f.Add(seedConversation(ReplayMsg{Session: "00000000000000cc"}, mustControl(TypeReset, ResetMsg{OldSession: "00000000000000aa", NewSession: "x/y"})))
	f.Add(seedConversation(ReplayMsg{Session: "00000000000000cc", Start: 1<<63 - 9, Offset: 1<<63 - 2}))
	f.Add(seedConversation(ReplayMsg{Session: "00000000000000cc", Start: 0, Offset: 200 << 10}))
	// A replay longer than the gateway keeps, sent in full.
	f.Add(seedConversation(ReplayMsg{Session: "00000000000000cc", Offset: fuzzReplayLimit + 3},
		output(0, strings.Repeat("y", fuzzReplayLimit+3)), output(fuzzReplayLimit+3, "live")))
	f.Add([]byte{TypeHello, 0xff, 0xff, 0xff, 0xff})
	SetReplayLimit(fuzzReplayLimit)
	f.Cleanup(func() { SetReplayLimit(0) })
	// The first nonce and proof of a process set up its crypto (random
	// source, self-tests): not a cost of any conversation, so not measured.
	_, _ = conversation(seedConversation(ReplayMsg{Session: "00000000000000cc"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		replay, _ := conversation(b)
		runtime.ReadMemStats(&after)
		if len(replay) > fuzzReplayLimit {
			t.Fatalf("kept %d bytes of replay, limit %d", len(replay), fuzzReplayLimit)
		}
		// The frame buffer (at most MaxPayload beyond what arrived), the
		// stream's buffer, a replay at most a few times what arrived and
		// the gateway's own small frames (one round per output frame of
		// at least 14 bytes): never the announced size.
		bound := uint64(MaxPayload + 256<<10 + 64*len(b))
		if got := after.TotalAlloc - before.TotalAlloc; got > bound {
			t.Fatalf("allocated %d bytes for a %d-byte conversation, bound %d", got, len(b), bound)
		}
	})
}
