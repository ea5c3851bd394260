package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/gorilla/websocket"
	"golang.org/x/crypto/ssh"
)

// The three ways to a shell. Every path starts the same command with the
// same TERM and window size.
const (
	pathDirect = "direct"
	pathSSH    = "ssh"
	pathWS     = "websocket"

	benchShell = "/bin/sh" // the gateway gets --shell /bin/sh
	benchTerm  = "xterm-256color"
	benchCols  = 200
	benchRows  = 50

	dialTimeout = 10 * time.Second
)

// term is one client's terminal: Write sends keystrokes, Read returns the
// terminal's output. SetDeadline bounds both (it fails the connection for
// good when it passes, which the benchmark treats as an error).
type term interface {
	io.ReadWriter
	SetDeadline(t time.Time) error
	Close() error
}

func dial(ctx context.Context, e *env, path, instance string) (term, error) {
	if _, ok := inGateway(path); ok {
		de, base := e.route(path)
		if de == nil {
			return nil, errNoDurable
		}
		return dial(ctx, de, base, instance)
	}
	switch path {
	case pathDirect:
		t, err := dialDirect(ctx, e, instance)
		if err != nil {
			return nil, err
		}
		return t, t.resize(ctx)
	case pathSSH:
		return dialSSH(ctx, e, instance)
	case pathWS:
		return dialWS(ctx, e, instance)
	case pathOpenSSH:
		return dialOpenSSH(ctx, e)
	case pathRelay:
		return dialRelay(ctx, e, instance)
	}
	return nil, fmt.Errorf("unknown path %q", path)
}

// directTerm is what `docker exec -it CONTAINER /bin/sh` does: a TTY exec
// created and attached through the Engine API, its raw stream hijacked.
type directTerm struct {
	e      *env
	execID string
	hr     types.HijackedResponse
}

// dialDirect creates and attaches the exec (attaching starts it). It does
// not set the window size: see resize.
func dialDirect(ctx context.Context, e *env, instance string) (*directTerm, error) {
	created, err := e.docker.ContainerExecCreate(ctx, instance, container.ExecOptions{
		Tty:          true,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		Env:          []string{"TERM=" + benchTerm},
		Cmd:          []string{benchShell},
	})
	if err != nil {
		return nil, fmt.Errorf("docker exec create in %s: %w", instance, err)
	}
	hr, err := e.docker.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: true})
	if err != nil {
		return nil, fmt.Errorf("docker exec attach in %s: %w", instance, err)
	}
	return &directTerm{e: e, execID: created.ID, hr: hr}, nil
}

// resize sets the window size, as the docker CLI does right after the
// attach.
func (d *directTerm) resize(ctx context.Context) error {
	err := d.e.docker.ContainerExecResize(ctx, d.execID, container.ResizeOptions{Height: benchRows, Width: benchCols})
	if err != nil {
		d.Close()
		return fmt.Errorf("docker exec resize: %w", err)
	}
	return nil
}

func (d *directTerm) Read(p []byte) (int, error)  { return d.hr.Reader.Read(p) }
func (d *directTerm) Write(p []byte) (int, error) { return d.hr.Conn.Write(p) }
func (d *directTerm) SetDeadline(t time.Time) error {
	return d.hr.Conn.SetDeadline(t)
}

// Close ends the shell (exit) and the stream; the container is removed at
// the end of the run anyway.
func (d *directTerm) Close() error {
	_ = d.hr.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = d.hr.Conn.Write([]byte("\x03exit\r"))
	d.hr.Close()
	return nil
}

// sshTerm is `ssh -t -p PORT INSTANCE@gateway` with golang.org/x/crypto/ssh.
type sshTerm struct {
	tcp    net.Conn
	client *ssh.Client
	sess   *ssh.Session
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *lockedBuffer
}

func dialSSH(ctx context.Context, e *env, instance string) (t *sshTerm, err error) {
	return dialSSHTo(ctx, e.sshAddr, instance, e.hostKey, e.signer)
}

// dialSSHAs is dialSSH with client key i (see signerFor).
func dialSSHAs(ctx context.Context, e *env, instance string, i int) (t *sshTerm, err error) {
	return dialSSHTo(ctx, e.sshAddr, instance, e.hostKey, e.signerFor(i))
}

// dialSSHTo logs in to addr as user with a PTY and a shell.
func dialSSHTo(ctx context.Context, addr, user string, hostKey ssh.PublicKey, signer ssh.Signer) (t *sshTerm, err error) {
	var d net.Dialer
	tcp, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh dial %s: %w", addr, err)
	}
	defer func() {
		if err != nil {
			tcp.Close()
		}
	}()
	stop := context.AfterFunc(ctx, func() { tcp.Close() })
	defer stop()
	_ = tcp.SetDeadline(time.Now().Add(dialTimeout))
	cc, chans, reqs, err := ssh.NewClientConn(tcp, addr, &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
	})
	if err != nil {
		return nil, fmt.Errorf("ssh handshake with %s: %w", addr, err)
	}
	t = &sshTerm{tcp: tcp, client: ssh.NewClient(cc, chans, reqs), stderr: &lockedBuffer{}}
	if t.sess, err = t.client.NewSession(); err != nil {
		return nil, fmt.Errorf("ssh session: %w", err)
	}
	if err := t.sess.RequestPty(benchTerm, benchRows, benchCols, ssh.TerminalModes{}); err != nil {
		return nil, fmt.Errorf("ssh pty request: %w", err)
	}
	t.sess.Stderr = t.stderr
	if t.stdin, err = t.sess.StdinPipe(); err != nil {
		return nil, err
	}
	if t.stdout, err = t.sess.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := t.sess.Shell(); err != nil {
		return nil, fmt.Errorf("ssh shell request: %w%s", err, t.said())
	}
	_ = tcp.SetDeadline(time.Time{})
	return t, nil
}

func (s *sshTerm) Read(p []byte) (int, error) {
	n, err := s.stdout.Read(p)
	if err == io.EOF {
		// Let the stderr notice arrive: it is sent before the exit status.
		waitDone := make(chan struct{})
		var werr error
		go func() { werr = s.sess.Wait(); close(waitDone) }()
		status := ""
		select {
		case <-waitDone:
			var exit *ssh.ExitError
			if werr == nil {
				status = " (exit status 0)"
			} else if errors.As(werr, &exit) {
				status = fmt.Sprintf(" (exit status %d)", exit.ExitStatus())
			}
		case <-time.After(time.Second):
		}
		err = fmt.Errorf("ssh session ended%s%s", status, s.said())
	}
	return n, err
}

func (s *sshTerm) Write(p []byte) (int, error)   { return s.stdin.Write(p) }
func (s *sshTerm) SetDeadline(t time.Time) error { return s.tcp.SetDeadline(t) }
func (s *sshTerm) Close() error                  { return s.client.Close() }

// said returns what the gateway wrote on stderr, as a suffix for errors.
func (s *sshTerm) said() string {
	if msg := strings.TrimSpace(s.stderr.String()); msg != "" {
		return ": gateway said: " + msg
	}
	return ""
}

// wsTerm is a program attached over WebSocket with a bearer token. Read
// returns the binary frames' bytes; text frames (events) are remembered
// and reported when the connection ends. A goroutine reads the connection
// all the time, as a browser does, so the gateway's pings are answered
// while the benchmark is busy elsewhere (the gateway closes a connection
// that leaves its pings unanswered for its pong timeout).
type wsTerm struct {
	c         *websocket.Conn
	frames    chan []byte   // binary payloads, in order; closed when the connection ends
	done      chan struct{} // closed by Close
	err       error         // why frames was closed; set before
	cur       []byte        // the rest of the frame being read
	closeOnce sync.Once

	mu       sync.Mutex
	deadline time.Time // for Read
}

func dialWS(ctx context.Context, e *env, instance string) (*wsTerm, error) {
	return dialWSWindow(ctx, e, instance, benchCols, benchRows)
}

// dialWSWindow is dialWS with a window of cols x rows.
func dialWSWindow(ctx context.Context, e *env, instance string, cols, rows int) (*wsTerm, error) {
	u := url.URL{Scheme: "ws", Host: e.webAddr, Path: "/api/instances/" + instance + "/terminal",
		RawQuery: fmt.Sprintf("cols=%d&rows=%d", cols, rows)}
	d := websocket.Dialer{HandshakeTimeout: dialTimeout, ReadBufferSize: 64 << 10, WriteBufferSize: 4 << 10}
	c, resp, err := d.DialContext(ctx, u.String(), http.Header{"Authorization": {"Bearer " + e.token}})
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			return nil, fmt.Errorf("websocket %s: %s %s", u.Path, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil, fmt.Errorf("websocket %s: %w", u.Path, err)
	}
	w := &wsTerm{c: c, frames: make(chan []byte, 256), done: make(chan struct{})}
	go w.readLoop()
	return w, nil
}

// readLoop reads frames until the connection ends (Close ends it).
func (w *wsTerm) readLoop() {
	lastEvent := ""
	for {
		typ, data, err := w.c.ReadMessage()
		if err != nil {
			if lastEvent != "" {
				w.err = fmt.Errorf("websocket ended after the event %s: %w", lastEvent, err)
			} else {
				w.err = fmt.Errorf("websocket ended: %w", err)
			}
			close(w.frames)
			return
		}
		if typ != websocket.BinaryMessage {
			var head struct{ Type string }
			if json.Unmarshal(data, &head) == nil && head.Type != "attached" {
				lastEvent = string(data)
			}
			continue
		}
		select {
		case w.frames <- data:
		case <-w.done:
			w.err = errors.New("websocket closed")
			close(w.frames)
			return
		}
	}
}

func (w *wsTerm) Read(p []byte) (int, error) {
	if len(w.cur) == 0 {
		w.mu.Lock()
		dl := w.deadline
		w.mu.Unlock()
		var expired <-chan time.Time
		if !dl.IsZero() {
			t := time.NewTimer(time.Until(dl))
			defer t.Stop()
			expired = t.C
		}
		select {
		case data, ok := <-w.frames:
			if !ok {
				return 0, w.err
			}
			w.cur = data
		case <-expired:
			return 0, fmt.Errorf("websocket read: %w", os.ErrDeadlineExceeded)
		}
	}
	n := copy(p, w.cur)
	w.cur = w.cur[n:]
	return n, nil
}

func (w *wsTerm) Write(p []byte) (int, error) {
	if err := w.c.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *wsTerm) SetDeadline(t time.Time) error {
	w.mu.Lock()
	w.deadline = t
	w.mu.Unlock()
	return w.c.SetWriteDeadline(t)
}

func (w *wsTerm) Close() error {
	w.closeOnce.Do(func() { close(w.done) })
	_ = w.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	return w.c.Close()
}

// lockedBuffer collects the gateway's stderr (x/crypto/ssh writes it from
// its own goroutine), keeping at most 4 KiB.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := 4<<10 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
