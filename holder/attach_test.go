package holder

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Attach as the exec's process runs it, over real pipes: the gateway
// writes the exec's stdin and reads its stdout (execPipes), Attach has the
// other ends, as "termgate-holder attach" has its stdin and stdout.

// execPipes is the gateway's end of an exec's stream.
type execPipes struct{ stdin, stdout *os.File }

func (e execPipes) Read(b []byte) (int, error)        { return e.stdout.Read(b) }
func (e execPipes) Write(b []byte) (int, error)       { return e.stdin.Write(b) }
func (e execPipes) SetReadDeadline(t time.Time) error { return e.stdout.SetReadDeadline(t) }
func (e execPipes) Close() error {
	e.stdin.Close()
	return e.stdout.Close()
}

// runAttach starts Attach on sock as an exec's process; its descriptors
// close when it returns, as a process's do when it exits. The channel
// gets what Attach returned.
func runAttach(t *testing.T, sock string, pass bool) (execPipes, <-chan error) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := Attach(sock, inR, outW, pass)
		inR.Close()
		outW.Close()
		done <- err
		close(done) // later receives (the cleanup's) return at once
	}()
	e := execPipes{stdin: inW, stdout: outR}
	t.Cleanup(func() {
		e.Close() // the engine ends the exec's streams with the test
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the attach process never ended")
		}
	})
	return e, done
}

// logLines collects a holder's log.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func holderWithLog(t *testing.T, cfg ServeConfig) (string, *logLines) {
	t.Helper()
	logs := &logLines{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = time.Minute
	}
	sock, _ := startHolderWith(t, cfg)
	return sock, logs
}

// waitDone waits for an attach process to end.
func waitDone(t *testing.T, done <-chan error, why string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Logf("attach ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the attach process did not end %s", why)
	}
}

// echo has the shell print a token and waits for it.
func (g *gw) echo(word string) {
	g.t.Helper()
	g.input("echo " + word[:1] + "\"\"" + word[1:] + "\n")
	g.until(word)
}

// The attach process hands the exec's stream to the holder, which then
// speaks to the gateway through it directly; when the gateway goes away
// (the engine ends the exec's stdin) the attach process ends, and the
// session stays for the next gateway.
func TestAttachPassesTheExecStream(t *testing.T) {
	sock, logs := holderWithLog(t, ServeConfig{})
	e, done := runAttach(t, sock, true)
	a := dialOver(t, e, Version)
	a.attach(AttachMsg{})
	a.send(ClientsFrame(1))
	pid := a.hello.PID
	a.echo("first")
	if !strings.Contains(logs.String(), "stream=passed") {
		t.Fatalf("the holder did not take the passed stream; its log:\n%s", logs)
	}
	resume := a.off
	e.stdin.Close() // the gateway is gone: the engine closes the exec's stdin
	waitDone(t, done, "once the gateway's stream ended")

	e2, _ := runAttach(t, sock, true)
	b := dialOver(t, e2, Version)
	if b.hello.PID != pid {
		t.Fatalf("the next gateway sees pid %d, want the same shell %d", b.hello.PID, pid)
	}
	b.attach(AttachMsg{Session: "s1", Since: resume})
	b.off = resume
	b.echo("second")
}

// A gateway's attach meeting a holder that takes no descriptors (a holder
// started by an older build still running after an upgrade) copies, as
// before: the session works and nothing is refused.
func TestAttachCopiesForAHolderWithoutPassing(t *testing.T) {
	sock, logs := holderWithLog(t, ServeConfig{NoPassing: true})
	e, done := runAttach(t, sock, true)
	a := dialOver(t, e, Version)
	a.attach(AttachMsg{})
	a.send(ClientsFrame(1))
	a.echo("copied")
	a.input("head -c 300000 /dev/zero | tr '\\0' y; echo; echo E\"\"ND\n")
	a.until("END")
	if got := strings.Count(a.out.String(), "y"); got < 300000 {
		t.Fatalf("got %d of 300000 bytes through the copying attach", got)
	}
	if !strings.Contains(logs.String(), "stream=socket") || strings.Contains(logs.String(), "refused") {
		t.Fatalf("want the gateway served over the socket; the holder's log:\n%s", logs)
	}
	e.stdin.Close()
	waitDone(t, done, "once the gateway's stream ended")
}

// An attach process of an older build passes nothing: the holder serves
// it over the socket.
func TestOlderAttachIsServedOverTheSocket(t *testing.T) {
	sock, logs := holderWithLog(t, ServeConfig{})
	e, done := runAttach(t, sock, false)
	a := dialOver(t, e, Version)
	a.attach(AttachMsg{})
	a.echo("older")
	if !strings.Contains(logs.String(), "stream=socket") {
		t.Fatalf("want the gateway served over the socket; the holder's log:\n%s", logs)
	}
	e.stdin.Close()
	waitDone(t, done, "once the gateway's stream ended")
}

// A gateway of another protocol version gets the holder's refusal through
// the attach process (the holder does not take the stream of a hello it
// refuses), and the session is left alone.
func TestPassedHelloOfAnotherVersionIsRefused(t *testing.T) {
	sock, _ := holderWithLog(t, ServeConfig{})
	e, done := runAttach(t, sock, true)
	dialOver(t, e, Version+1) // fails the test unless it gets an error frame
	waitDone(t, done, "after the refusal")
	e2, _ := runAttach(t, sock, true)
	b := dialOver(t, e2, Version)
	b.attach(AttachMsg{})
	b.echo("alive")
}

// When the session ends, the holder's end of a passed stream closes too:
// the gateway reads the exit and then the end of the stream, the attach
// process ends, and the holder exits (it waits for its connections).
func TestSessionEndClosesThePassedStream(t *testing.T) {
	sock, stopped := startHolderWith(t, ServeConfig{IdleTimeout: time.Minute})
	e, done := runAttach(t, sock, true)
	a := dialOver(t, e, Version)
	a.attach(AttachMsg{})
	a.input("exit 7\n")
	for {
		f := a.next()
		if f.Type != TypeExit {
			continue
		}
		var m ExitMsg
		if err := DecodeControl(f, &m); err != nil || m.Code != 7 {
			t.Fatalf("exit frame %+v (%v), want code 7", m, err)
		}
		break
	}
	_ = e.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := a.r.ReadFrame(); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("after the exit: %v, want the end of the stream", err)
	}
	waitDone(t, done, "after the session ended")
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not exit after its session ended")
	}
}

// A gateway that takes nothing from its passed stream, with the holder's
// write to it blocked on a full pipe, neither keeps the holder from
// stopping nor keeps it alive: the blocked write is interrupted.
func TestStuckPassedStreamDoesNotHoldTheHolder(t *testing.T) {
	old := connStall
	connStall = time.Second
	t.Cleanup(func() { connStall = old })
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil { // a holder's directory (trust.go)
		t.Fatal(err)
	}
	sock := dir + "/s.sock"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ServeConfig{Socket: sock, Session: "s1", Shell: []string{"/bin/sh"},
			Env: []string{"PS1=$ ", "TERM=dumb"}, IdleTimeout: time.Minute, Key: testKey})
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if listening(sock) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("holder socket never appeared")
		}
	}
	e, done := runAttach(t, sock, true)
	a := dialOver(t, e, Version)
	a.attach(AttachMsg{})
	// 512 KiB: past the pipe's buffer, below connHigh (the pump goes on,
	// the writer blocks), and the gateway reads none of it.
	a.input("head -c 524288 /dev/zero | tr '\\0' z; echo\n")
	time.Sleep(time.Second)
	cancel()
	select {
	case err := <-served:
		t.Logf("holder stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not stop while a gateway's passed stream was full")
	}
	waitDone(t, done, "after the holder stopped")
}

// The attach process of a passed stream ends when the holder drops the
// connection (here: the holder dies), so the engine ends the exec.
func TestAttachEndsWhenTheHolderGoes(t *testing.T) {
	sock, stopped := startHolderWith(t, ServeConfig{IdleTimeout: 2 * time.Second})
	e, done := runAttach(t, sock, true)
	a := dialOver(t, e, Version)
	a.attach(AttachMsg{})
	a.echo("ready")
	// No client counted: the session is reaped after 2 s.
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle session was not reaped")
	}
	waitDone(t, done, "after the holder ended")
}

// readFrameBytes (the attach process's exact read of the gateway's first
// frame) agrees with ReadFrame on any input, and reads no further.
func FuzzReadFrameBytes(f *testing.F) {
	hello, _ := ControlFrame(TypeHello, HelloMsg{Proto: Version, Gateway: "g"})
	f.Add(append(hello, "more"...))
	f.Add([]byte{'i', 0, 0, 0})
	f.Add([]byte{'i', 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		got, err := readFrameBytes(r)
		want, werr := NewReader(bytes.NewReader(b)).ReadFrame()
		if (err == nil) != (werr == nil) {
			t.Fatalf("readFrameBytes: %v, ReadFrame: %v", err, werr)
		}
		if err != nil {
			return
		}
		if got[0] != want.Type || !bytes.Equal(got[headerLen:], want.Payload) {
			t.Fatalf("readFrameBytes %q, ReadFrame %q %q", got, want.Type, want.Payload)
		}
		if rest := len(b) - r.Len(); rest != len(got) {
			t.Fatalf("read %d bytes for a frame of %d", rest, len(got))
		}
	})
}
