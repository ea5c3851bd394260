package holder

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startHolder runs a holder with /bin/sh until the test ends.
func startHolder(t *testing.T, idle time.Duration) (sock string, stopped <-chan error) {
	t.Helper()
	return startHolderWith(t, ServeConfig{IdleTimeout: idle})
}

// startHolderWith runs a holder with /bin/sh and cfg's other settings.
func startHolderWith(t *testing.T, cfg ServeConfig) (sock string, stopped <-chan error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil { // a holder's directory (trust.go)
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "s.sock")
	cfg.Socket, cfg.Session, cfg.Build = sock, "s1", "test"
	if cfg.Key == nil {
		cfg.Key = testKey
	}
	cfg.Shell, cfg.Env = []string{"/bin/sh"}, []string{"PS1=$ ", "TERM=dumb"}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	served := make(chan struct{})
	go func() {
		defer close(served)
		errc <- Serve(ctx, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("holder did not stop")
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if listening(sock) {
			return sock, errc
		}
		if time.Now().After(deadline) {
			t.Fatal("holder socket never listened")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listening reports whether a unix socket bound at path listens (Linux:
// /proc/net/unix). Its file appears at bind, a moment before listen, and
// a dial in between is refused: a busy CI machine saw that moment.
func listening(path string) bool {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		_, err := os.Stat(path) // not Linux: the file will do
		return err == nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)                              // Num RefCount Protocol Flags Type St Inode Path
		if len(f) >= 8 && f[7] == path && f[3] == "00010000" { // __SO_ACCEPTCON
			return true
		}
	}
	return false
}

// testKey is the key of the tests' holders (ServeConfig.Key).
var testKey = bytes.Repeat([]byte{7}, KeyLen)

// gw is a gateway's end of a holder connection, for tests.
type gw struct {
	t     *testing.T
	nc    gwConn
	r     *Reader
	key   []byte // what it proves it has (testKey)
	nonce string // its hello's
	hello HelloMsg
	out   bytes.Buffer
	off   int64 // offset after the last output byte seen
}

// gwConn is the stream a test gateway speaks on: the holder's socket, or
// an exec's stdin and stdout (execPipes).
type gwConn interface {
	io.ReadWriteCloser
	SetReadDeadline(time.Time) error
}

func dial(t *testing.T, sock string, proto int) *gw {
	t.Helper()
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	return dialOver(t, nc, proto)
}

// dialOver says hello over nc, as dial does, with testKey.
func dialOver(t *testing.T, nc gwConn, proto int) *gw {
	t.Helper()
	return dialKey(t, nc, proto, testKey)
}

// dialKey says hello over nc as a gateway with key, and checks the
// holder's proof when key is the holder's.
func dialKey(t *testing.T, nc gwConn, proto int, key []byte) *gw {
	t.Helper()
	t.Cleanup(func() { nc.Close() })
	g := &gw{t: t, nc: nc, r: NewReader(bufio.NewReader(nc)), key: key, nonce: newNonce()}
	g.send(mustControl(TypeHello, HelloMsg{Proto: proto, Gateway: "test", Nonce: g.nonce}))
	f := g.next()
	if proto != Version {
		if f.Type != TypeError {
			t.Fatalf("a gateway of protocol %d got %q, want an error frame", proto, f.Type)
		}
		return g
	}
	h, err := CheckHello(f)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(key, testKey) && h.Proof != HolderProof(key, g.nonce, h.Nonce) {
		t.Fatalf("the holder's hello %+v has no valid proof", h)
	}
	g.hello = h
	return g
}

// attach sends an attach with the gateway's proof.
func (g *gw) attach(m AttachMsg) {
	g.t.Helper()
	m.Proof = gatewayProof(g.key, g.nonce, g.hello.Nonce)
	g.send(mustControl(TypeAttach, m))
}

func mustControl(typ byte, m any) []byte {
	b, err := ControlFrame(typ, m)
	if err != nil {
		panic(err)
	}
	return b
}

func (g *gw) send(b []byte) {
	g.t.Helper()
	if _, err := g.nc.Write(b); err != nil {
		g.t.Fatal(err)
	}
}

func (g *gw) input(s string) {
	b, _ := AppendFrame(nil, TypeInput, []byte(s))
	g.send(b)
}

func (g *gw) next() Frame {
	g.t.Helper()
	_ = g.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := g.r.ReadFrame()
	if err != nil {
		g.t.Fatalf("read frame: %v (output so far %q)", err, g.out.String())
	}
	return f
}

// until reads frames until the output contains want; it returns the
// control frames seen meanwhile.
func (g *gw) until(want string) []Frame {
	g.t.Helper()
	var ctl []Frame
	for !strings.Contains(g.out.String(), want) {
		f := g.next()
		if f.Type == TypeOutput {
			off, data, err := DecodeOutput(f)
			if err != nil {
				g.t.Fatal(err)
			}
			if off != g.off && g.off != 0 {
				g.t.Fatalf("output at offset %d, want %d (lost or doubled bytes)", off, g.off)
			}
			g.out.Write(data)
			g.off = off + int64(len(data))
			continue
		}
		if f.Type == TypeReset { // a fresh session numbers its output from 0
			g.out.Reset()
			g.off = 0
		}
		ctl = append(ctl, Frame{Type: f.Type, Payload: append([]byte(nil), f.Payload...)})
	}
	return ctl
}

func TestHolderKeepsTheShellAcrossGateways(t *testing.T) {
	sock, _ := startHolder(t, time.Minute)
	a := dial(t, sock, Version)
	a.attach(AttachMsg{})
	a.send(ClientsFrame(1))
	pid := a.hello.PID
	a.input("echo pid=$$\n")
	a.until("pid=" + strconv.Itoa(pid))
	a.input("sleep 1000 & echo sta\"\"rted\n")
	a.until("started\r\n")
	resume := a.off
	a.nc.Close() // the gateway crashes

	b := dial(t, sock, Version) // the next gateway adopts the session
	if b.hello.Session != "s1" || b.hello.PID != pid {
		t.Fatalf("second gateway sees %+v, want session s1 with pid %d", b.hello, pid)
	}
	b.attach(AttachMsg{Session: "s1", Since: resume})
	b.off = resume
	b.input("echo again=$$\n")
	ctl := b.until("again=" + strconv.Itoa(pid))
	var rep ReplayMsg
	if len(ctl) == 0 || ctl[0].Type != TypeReplay || DecodeControl(ctl[0], &rep) != nil || rep.Gap || rep.Offset < resume {
		t.Fatalf("replay header %v (%+v), want an exact resume at %d", ctl, rep, resume)
	}
	// A gateway speaking another protocol version is refused, and the
	// session is left alone.
	dial(t, sock, Version+1)
	b.input("echo still=$$\n")
	b.until("still=" + strconv.Itoa(pid))
}

func TestHolderResetKillsEverything(t *testing.T) {
	sock, _ := startHolder(t, time.Minute)
	a := dial(t, sock, Version)
	a.attach(AttachMsg{})
	a.input("sleep 1001 & echo job=$! e\"\"nd\n")
	a.until(" end\r\n")
	out := a.out.String()
	out = out[strings.LastIndex(out, "job=")+4:]
	job, err := strconv.Atoi(strings.Fields(out)[0])
	if err != nil {
		t.Fatalf("no job pid in %q", out)
	}
	a.send(mustControl(TypeReset, ResetMsg{NewSession: "s2", By: "test"}))
	a.input("echo fr\"\"esh\n")
	ctl := a.until("fresh\r\n")
	var m ResetMsg
	if ctl[0].Type != TypeReset || DecodeControl(ctl[0], &m) != nil || m.OldSession != "s1" || m.NewSession != "s2" {
		t.Fatalf("control frames %v, want a reset s1 → s2", ctl)
	}
	deadline := time.Now().Add(5 * time.Second)
	for processExists(job) && !isZombie(job) {
		if time.Now().After(deadline) {
			t.Fatalf("background job %d survived the reset", job)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func processExists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

func isZombie(pid int) bool {
	st, ok := statOf(pid)
	return ok && st.state == "Z"
}

func TestHolderReapsIdleSessionWithoutGateway(t *testing.T) {
	sock, stopped := startHolder(t, 300*time.Millisecond)
	a := dial(t, sock, Version)
	a.attach(AttachMsg{})
	a.send(ClientsFrame(1))
	time.Sleep(600 * time.Millisecond) // a client attached: never reaped
	a.input("echo al\"\"ive\n")
	a.until("alive")
	a.nc.Close() // no gateway left at all
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("holder ended with %v, want nil after reaping", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("idle session not reaped with no gateway attached")
	}
	if _, err := net.Dial("unix", sock); !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("socket still answers after reaping: %v", err)
	}
}

// A second holder on a live holder's socket (a second gateway racing the
// first to start the instance's session) starts no shell and leaves the
// socket to the first.
func TestSecondHolderLeavesTheFirstAlone(t *testing.T) {
	sock, _ := startHolder(t, time.Minute)
	started := false
	err := Serve(context.Background(), ServeConfig{
		Socket: sock, Session: "s2", Shell: []string{"/bin/sh"}, Build: "test", Key: testKey,
		Ready: func() { started = true },
	})
	if !errors.Is(err, ErrAlreadyHeld) || started {
		t.Fatalf("second Serve = %v (started %v), want ErrAlreadyHeld and nothing started", err, started)
	}
	a := dial(t, sock, Version)
	if a.hello.Session != "s1" || a.hello.Created == 0 {
		t.Fatalf("the socket answers with %+v, want the first holder's session s1 with its start time", a.hello)
	}
}

// A gateway that starts a session for a client says so in its hello: the
// holder counts that client at once, so a short idle timeout does not reap
// the session before the gateway's first clients frame.
func TestHelloClientsCountAtOnce(t *testing.T) {
	sock, stopped := startHolder(t, time.Second)
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, _, err := DialClients(nc, testKey, "test", "", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stopped:
		t.Fatalf("reaped (%v) with the gateway's client counted from its hello", err)
	case <-time.After(2 * time.Second):
	}
	if err := c.Clients(0); err != nil { // the client left: now it is idle
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("not reaped once the gateway said it has no client")
	}
}

// A request the holder refuses (here a window size out of range) does not
// end the gateway's stream: Read goes on with the output.
func TestRefusedRequestKeepsTheStream(t *testing.T) {
	sock, _ := startHolder(t, time.Minute)
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, _, err := Dial(nc, testKey, "test", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Resize(context.Background(), 0, 24); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("echo st\"\"ill\n")); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out bytes.Buffer
	buf := make([]byte, 4096)
	for !strings.Contains(out.String(), "still") {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("Read after a refused request: %v (output %q)", err, out.String())
		}
		out.Write(buf[:n])
	}
	if !strings.Contains(c.LastError(), "outside 1..1000") {
		t.Fatalf("LastError = %q, want the refusal", c.LastError())
	}
}
