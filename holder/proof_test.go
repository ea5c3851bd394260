package holder

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// otherKey is another deployment's key.
var otherKey = bytes.Repeat([]byte{9}, KeyLen)

// dialWith says hello to the holder on sock as a gateway with key.
func dialWith(t *testing.T, sock string, key []byte, hello HelloMsg) *gw {
	t.Helper()
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	g := &gw{t: t, nc: nc, r: NewReader(nc), key: key, nonce: newNonce()}
	hello.Proto, hello.Gateway, hello.Nonce = Version, "other", g.nonce
	g.send(mustControl(TypeHello, hello))
	h, err := CheckHello(g.next())
	if err != nil {
		t.Fatal(err)
	}
	g.hello = h
	return g
}

// refused reads what the holder sends until it closes the connection, and
// fails unless it said first that the gateway is not its deployment's.
func (g *gw) refused() {
	g.t.Helper()
	f := g.next()
	var m ErrorMsg
	if f.Type != TypeError || DecodeControl(f, &m) != nil || m.Message != errNotOurs {
		g.t.Fatalf("got a %q frame %q, want the error %q", f.Type, f.Payload, errNotOurs)
	}
	_ = g.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if f, err := g.r.ReadFrame(); err == nil {
		g.t.Fatalf("the holder sent a %q frame after refusing the gateway, want the connection closed", f.Type)
	}
}

// A gateway of another deployment (without this holder's key) gets no
// frame through: not before an attach (input, resize, clients, reset, end)
// and not with a wrong proof in it. The session, its shell and what the
// shell did are as the holder's own gateway left them.
func TestForeignGatewayCanSendNothing(t *testing.T) {
	sock, _ := startHolder(t, time.Minute)
	pwned := filepath.Join(t.TempDir(), "pwned")
	input, _ := AppendFrame(nil, TypeInput, []byte("echo x > "+pwned+"\n"))
	for _, tc := range []struct {
		name   string
		frames [][]byte
	}{
		{"input", [][]byte{input}},
		{"resize", [][]byte{ResizeFrame(99, 9)}},
		{"clients", [][]byte{ClientsFrame(3)}},
		{"reset", [][]byte{mustControl(TypeReset, ResetMsg{NewSession: "s2", By: "other"})}},
		{"end", [][]byte{mustControl(TypeEnd, struct{}{})}},
		{"an attach without a proof", [][]byte{mustControl(TypeAttach, AttachMsg{}), input}},
		{"an attach with a wrong proof", nil},
		{"the holder's own proof as the gateway's", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := dialWith(t, sock, otherKey, HelloMsg{Clients: 1})
			switch tc.name {
			case "an attach with a wrong proof":
				g.attach(AttachMsg{})
			case "the holder's own proof as the gateway's":
				g.send(mustControl(TypeAttach, AttachMsg{Proof: g.hello.Proof}))
			}
			// The holder may close the connection after the first of
			// them: a write that fails then is what a refused gateway
			// gets. Whatever follows the refusal is not taken either.
			for _, f := range append(tc.frames, input, mustControl(TypeEnd, struct{}{})) {
				_, _ = g.nc.Write(f)
			}
			g.refused()
		})
	}
	own := dial(t, sock, Version)
	if own.hello.Session != "s1" || own.hello.Cols != 80 {
		t.Fatalf("the holder's own gateway finds %+v, want session s1 at 80 columns (not reset, not resized)", own.hello)
	}
	own.attach(AttachMsg{})
	own.input("test -e " + pwned + " && echo fou\"\"nd || echo abs\"\"ent\n")
	own.until("absent")
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("a foreign gateway's input reached the shell")
	}
}

// A foreign gateway's clients never count: a gateway that says hello with
// a client and then only stays connected does not keep an idle session from
// being reaped.
func TestForeignGatewayClientsDoNotCount(t *testing.T) {
	sock, stopped := startHolder(t, time.Second)
	dialWith(t, sock, otherKey, HelloMsg{Clients: 1}) // and then it only stays
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("holder ended with %v, want nil after reaping", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a foreign gateway's hello kept the idle session from being reaped")
	}
}

// A holder without the gateway's key is refused before the gateway looks at
// its session or sends it anything more: Dial says ErrForeign.
func TestHolderWithoutTheKeyIsRefused(t *testing.T) {
	sock, _ := startHolderWith(t, ServeConfig{Key: otherKey, IdleTimeout: time.Minute})
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Dial(nc, testKey, "gw", "", 0); !errors.Is(err, ErrForeign) {
		t.Fatalf("Dial = %v, want ErrForeign", err)
	}
	// A fake holder that proves nothing, or sends no proof at all.
	for _, proof := range []string{"", strings.Repeat("0", 64)} {
		gwEnd, h := net.Pipe()
		go func() {
			defer h.Close()
			r := NewReader(h)
			if _, err := r.ReadFrame(); err != nil {
				return
			}
			_, _ = h.Write(mustControl(TypeHello, HelloMsg{Proto: Version, Session: "00000000000000cc", Nonce: newNonce(), Proof: proof}))
			_, _ = io.Copy(io.Discard, h)
		}()
		_ = gwEnd.SetDeadline(time.Now().Add(10 * time.Second))
		if _, _, err := Dial(gwEnd, testKey, "gw", "", 0); !errors.Is(err, ErrForeign) {
			t.Fatalf("proof %q: Dial = %v, want ErrForeign", proof, err)
		}
	}
}

// A proof is good for its connection's two nonces only: a gateway's proof
// seen on one connection does not open another, and a holder's hello seen
// once does not fool a gateway again.
func TestProofsAreNotReplayable(t *testing.T) {
	sock, _ := startHolder(t, time.Minute)
	first := dial(t, sock, Version)
	seen := mustControl(TypeAttach, AttachMsg{Proof: gatewayProof(testKey, first.nonce, first.hello.Nonce)})
	first.send(seen) // a genuine attach
	first.until("$ ")

	// The same hello (the same gateway nonce) and the attach seen before.
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	again := &gw{t: t, nc: nc, r: NewReader(nc), key: otherKey, nonce: first.nonce}
	t.Cleanup(func() { nc.Close() })
	again.send(mustControl(TypeHello, HelloMsg{Proto: Version, Nonce: first.nonce}))
	if again.hello, err = CheckHello(again.next()); err != nil {
		t.Fatal(err)
	}
	if again.hello.Nonce == first.hello.Nonce {
		t.Fatal("the holder used the same nonce twice")
	}
	again.send(seen)
	again.refused()

	// A recorded holder hello, replayed to a gateway with a fresh nonce.
	recorded := mustControl(TypeHello, first.hello)
	gwEnd, h := net.Pipe()
	go func() {
		defer h.Close()
		if _, err := NewReader(h).ReadFrame(); err != nil {
			return
		}
		_, _ = h.Write(recorded)
		_, _ = io.Copy(io.Discard, h)
	}()
	_ = gwEnd.SetDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := Dial(gwEnd, testKey, "gw", "", 0); !errors.Is(err, ErrForeign) {
		t.Fatalf("a replayed holder hello: Dial = %v, want ErrForeign", err)
	}
}

// A holder is never started without a key: it could prove nothing, and
// would serve anyone.
func TestServeNeedsAKey(t *testing.T) {
	dir := t.TempDir()
	err := Serve(context.Background(), ServeConfig{Socket: filepath.Join(dir, "s.sock"), Session: "s1", Shell: []string{"/bin/sh"}})
	if err == nil || !strings.Contains(err.Error(), "--key-stdin") {
		t.Fatalf("Serve without a key = %v, want a refusal naming --key-stdin", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.sock")); err == nil {
		t.Fatal("a holder without a key listens")
	}
}

// The key line a gateway writes to "serve --key-stdin" is read exactly: the
// gateway's frames that follow it stay in the stream.
func TestKeyLineIsReadExactly(t *testing.T) {
	hello := mustControl(TypeHello, HelloMsg{Proto: Version})
	r := bytes.NewReader(append(KeyLine(testKey), hello...))
	key, err := ReadKeyLine(iotestOneByte{r})
	if err != nil || !bytes.Equal(key, testKey) {
		t.Fatalf("ReadKeyLine = %x, %v; want the key", key, err)
	}
	if rest, _ := io.ReadAll(r); !bytes.Equal(rest, hello) {
		t.Fatalf("left %q after the key line, want the hello", rest)
	}
	for _, bad := range []string{"", strings.Repeat("g", 64) + "\n", strings.Repeat("a", 64) + " ", strings.Repeat("a", 62) + "\n"} {
		if _, err := ReadKeyLine(strings.NewReader(bad)); err == nil {
			t.Fatalf("ReadKeyLine(%q) took it", bad)
		}
	}
}

// iotestOneByte reads one byte at a time, as a pipe may deliver.
type iotestOneByte struct{ r io.Reader }

func (o iotestOneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }
