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
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/termtest"
)

// Close kinds: how a client leaves.
const (
	closeClean = "clean" // SSH: channel close, then disconnect; WebSocket: close handshake
	closeFIN   = "fin"   // the TCP connection is closed without a goodbye
	closeRST   = "rst"   // SO_LINGER 0: the connection is reset
)

var closeKinds = []string{closeClean, closeFIN, closeRST}

// dialTimeout bounds an attach: a new session waits for a docker exec,
// which takes seconds on a loaded machine.
const dialTimeout = 60 * time.Second

// term is an interactive client of a session, over SSH or WebSocket.
type term interface {
	io.ReadWriter
	// SetDeadline bounds reads and writes (a passed deadline fails the
	// client for good).
	SetDeadline(t time.Time) error
	// Leave disconnects the way kind says.
	Leave(kind string) error
	Via() string
}

// ---- SSH (golang.org/x/crypto/ssh) ----

type sshTerm struct {
	tcp    *net.TCPConn
	client *ssh.Client
	sess   *ssh.Session
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *termtest.SyncBuffer
}

// sshConn opens an authenticated connection as user with key k.
func (g *gateway) sshConn(ctx context.Context, k int, user string) (*ssh.Client, *net.TCPConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", g.sshAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("ssh dial %s: %w", g.sshAddr, err)
	}
	tcp := c.(*net.TCPConn)
	_ = tcp.SetDeadline(time.Now().Add(dialTimeout))
	cc, chans, reqs, err := ssh.NewClientConn(tcp, g.sshAddr, &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(g.e.signers[k%len(g.e.signers)])},
		HostKeyCallback: ssh.FixedHostKey(g.e.hostKey),
	})
	if err != nil {
		tcp.Close()
		return nil, nil, fmt.Errorf("ssh handshake: %w", err)
	}
	_ = tcp.SetDeadline(time.Time{})
	return ssh.NewClient(cc, chans, reqs), tcp, nil
}

// attachSSH attaches to instance with a PTY (80x24), with key k.
func (g *gateway) attachSSH(ctx context.Context, k int, instance string) (t *sshTerm, err error) {
	client, tcp, err := g.sshConn(ctx, k, instance)
	if err != nil {
		return nil, err
	}
	t = &sshTerm{tcp: tcp, client: client, stderr: &termtest.SyncBuffer{}}
	defer func() {
		if err != nil {
			client.Close()
		}
	}()
	_ = tcp.SetDeadline(time.Now().Add(dialTimeout))
	if t.sess, err = client.NewSession(); err != nil {
		return nil, fmt.Errorf("ssh session: %w", err)
	}
	if err := t.sess.RequestPty("xterm", 24, 80, ssh.TerminalModes{}); err != nil {
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
		return nil, fmt.Errorf("ssh shell request: %w (gateway said %q)", err, t.stderr.String())
	}
	_ = tcp.SetDeadline(time.Time{})
	return t, nil
}

func (t *sshTerm) Read(p []byte) (int, error) {
	n, err := t.stdout.Read(p)
	if err == io.EOF {
		err = fmt.Errorf("ssh session ended (gateway said %q)", strings.TrimSpace(t.stderr.String()))
	}
	return n, err
}

// told returns what the gateway wrote on stderr once the session has ended
// (Wait lets x/crypto finish copying it), at most 2 s later.
func (t *sshTerm) told() string {
	done := make(chan struct{})
	go func() {
		_ = t.sess.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = t.client.Close() // ends Wait
		<-done
	}
	return strings.TrimSpace(t.stderr.String())
}

func (t *sshTerm) Write(p []byte) (int, error)   { return t.stdin.Write(p) }
func (t *sshTerm) SetDeadline(d time.Time) error { return t.tcp.SetDeadline(d) }
func (t *sshTerm) Via() string                   { return "ssh" }

func (t *sshTerm) Leave(kind string) error {
	switch kind {
	case closeClean:
		_ = t.tcp.SetDeadline(time.Now().Add(5 * time.Second))
		_ = t.sess.Close() // channel close; the gateway sees a detach
		return t.client.Close()
	case closeRST:
		_ = t.tcp.SetLinger(0)
	}
	return t.client.Close() // no disconnect message: the gateway sees the connection end
}

// sshCommand runs cmd (no PTY) as user with key k; it returns stdout,
// stderr and the exit status.
func (g *gateway) sshCommand(ctx context.Context, k int, user, cmd string) (string, string, int, error) {
	client, tcp, err := g.sshConn(ctx, k, user)
	if err != nil {
		return "", "", -1, err
	}
	defer client.Close()
	stop := context.AfterFunc(ctx, func() { tcp.Close() })
	defer stop()
	_ = tcp.SetDeadline(time.Now().Add(90 * time.Second))
	s, err := client.NewSession()
	if err != nil {
		return "", "", -1, err
	}
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	err = s.Run(cmd)
	var exit *ssh.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0, nil
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitStatus(), nil
	}
	return stdout.String(), stderr.String(), -1, fmt.Errorf("ssh %q: %w", cmd, err)
}

// ---- WebSocket (gorilla/websocket) ----

type wsEvent struct {
	Type    string `json:"type"`
	Session string `json:"session"`
	Message string `json:"message"`
	Code    *int   `json:"code"`
	New     bool   `json:"new"`
	Offset  int64  `json:"offset"`
	Gap     bool   `json:"gap"`
}

type wsTerm struct {
	c      *websocket.Conn
	r      io.Reader // the binary message being read
	events []wsEvent // every event read so far (the reading goroutine's)
}

func (g *gateway) wsURL(instance string) string {
	u := url.URL{Scheme: "ws", Host: g.httpAddr, Path: "/api/instances/" + instance + "/terminal", RawQuery: "cols=80&rows=24"}
	return u.String()
}

// attachWS attaches over WebSocket with the bearer token and reads the
// attached event.
func (g *gateway) attachWS(ctx context.Context, instance string) (*wsTerm, error) {
	d := websocket.Dialer{HandshakeTimeout: dialTimeout, ReadBufferSize: 32 << 10, WriteBufferSize: 32 << 10}
	c, resp, err := d.DialContext(ctx, g.wsURL(instance), http.Header{"Authorization": {"Bearer " + g.e.token}})
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			return nil, fmt.Errorf("websocket %s: %s %s", instance, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil, fmt.Errorf("websocket %s: %w", instance, err)
	}
	t := &wsTerm{c: c}
	_ = c.SetReadDeadline(time.Now().Add(dialTimeout))
	if _, err := t.nextEvent(); err != nil {
		c.Close()
		return nil, fmt.Errorf("websocket %s: no attached event: %w", instance, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	if t.events[0].Type != "attached" {
		c.Close()
		return nil, fmt.Errorf("websocket %s: first event %+v, want attached", instance, t.events[0])
	}
	return t, nil
}

func (t *wsTerm) Read(p []byte) (int, error) {
	for {
		if t.r != nil {
			n, err := t.r.Read(p)
			if err == io.EOF {
				t.r = nil
				if n == 0 {
					continue
				}
				err = nil
			}
			return n, err
		}
		typ, r, err := t.c.NextReader()
		if err != nil {
			if n := len(t.events); n > 1 {
				return 0, fmt.Errorf("websocket ended after the event %+v: %w", t.events[n-1], err)
			}
			return 0, fmt.Errorf("websocket ended: %w", err)
		}
		if typ == websocket.BinaryMessage {
			t.r = r
			continue
		}
		if err := t.addEvent(r); err != nil {
			return 0, err
		}
	}
}

func (t *wsTerm) addEvent(r io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return err
	}
	var ev wsEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return fmt.Errorf("event %q: %w", b, err)
	}
	t.events = append(t.events, ev)
	return nil
}

// nextEvent reads, skipping output, until the next event.
func (t *wsTerm) nextEvent() (wsEvent, error) {
	n := len(t.events)
	t.r = nil
	for len(t.events) == n {
		typ, r, err := t.c.NextReader()
		if err != nil {
			return wsEvent{}, err
		}
		if typ == websocket.TextMessage {
			if err := t.addEvent(r); err != nil {
				return wsEvent{}, err
			}
		}
	}
	return t.events[n], nil
}

// waitEvent reads until an event of type typ (output is skipped).
func (t *wsTerm) waitEvent(typ string, d time.Duration) (wsEvent, error) {
	_ = t.c.SetReadDeadline(time.Now().Add(d))
	defer t.c.SetReadDeadline(time.Time{})
	for {
		ev, err := t.nextEvent()
		if err != nil || ev.Type == typ {
			return ev, err
		}
	}
}

func (t *wsTerm) Write(p []byte) (int, error) {
	if err := t.c.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (t *wsTerm) control(msg string) error {
	return t.c.WriteMessage(websocket.TextMessage, []byte(msg))
}

func (t *wsTerm) SetDeadline(d time.Time) error {
	return errors.Join(t.c.SetReadDeadline(d), t.c.SetWriteDeadline(d))
}
func (t *wsTerm) Via() string { return "websocket" }

func (t *wsTerm) Leave(kind string) error {
	switch kind {
	case closeClean:
		_ = t.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(2*time.Second))
		// Wait for the gateway's close frame (the end of the handshake).
		_ = t.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, _, err := t.c.NextReader(); err != nil {
				break
			}
		}
	case closeRST:
		if tcp, ok := t.c.NetConn().(*net.TCPConn); ok {
			_ = tcp.SetLinger(0)
		}
	}
	return t.c.Close()
}

// ---- driving a shell ----

// markerSeq numbers markers: a replay may carry earlier markers, so none is
// printed twice.
var markerSeq atomic.Int64

// marker returns a fresh marker and the printf that prints it; the echo of
// the command line never contains the marker.
func marker() (m []byte, printf string) {
	n := markerSeq.Add(1)
	return fmt.Appendf(nil, "TGS%dK", n), fmt.Sprintf("printf 'TGS%%dK\\n' %d", n)
}

// command types cmd and a marker's printf and reads until the marker, at
// most d; it returns the bytes read.
func command(t term, cmd string, d time.Duration) (int64, error) {
	_ = t.SetDeadline(time.Now().Add(d))
	defer t.SetDeadline(time.Time{})
	m, printf := marker()
	line := joinCmd(cmd, printf)
	if _, err := t.Write([]byte(line + "\r")); err != nil {
		return 0, fmt.Errorf("%s: write %q: %w", t.Via(), line, err)
	}
	n, err := readUntil(t, m)
	if err != nil {
		return n, fmt.Errorf("%s: waiting for the output of %q: %w", t.Via(), line, err)
	}
	return n, nil
}

// joinCmd appends the marker's printf to cmd ("a &; b" is a syntax error).
func joinCmd(cmd, printf string) string {
	switch {
	case cmd == "":
		return printf
	case strings.HasSuffix(cmd, "&"):
		return cmd + " " + printf
	}
	return cmd + "; " + printf
}

// readUntil reads until m has been seen (it may straddle reads) and returns
// the bytes read; what follows m in the same read is dropped.
func readUntil(r io.Reader, m []byte) (int64, error) {
	buf := make([]byte, 64<<10)
	hay := make([]byte, 0, len(buf)+len(m))
	var total int64
	for {
		n, err := r.Read(buf)
		total += int64(n)
		if n > 0 {
			keep := max(0, len(hay)-(len(m)-1))
			hay = append(hay[:0], hay[keep:]...)
			hay = append(hay, buf[:n]...)
			if bytes.Contains(hay, m) {
				return total, nil
			}
		}
		if err != nil {
			return total, fmt.Errorf("after %d bytes (ending %q): %w", total, tail(string(hay), 160), err)
		}
	}
}

// shellPID asks the shell who it is: its PID and its start time (field 22
// of /proc/$$/stat, in clock ticks since the host booted). The PID alone
// is not an identity: a restarted container has a fresh PID namespace, so
// its first shell often gets the very number the old one had (seen in CI
// after the engine-kill case restarted the container).
func shellPID(t term) (string, error) {
	_ = t.SetDeadline(time.Now().Add(20 * time.Second))
	defer t.SetDeadline(time.Time{})
	n := markerSeq.Add(1)
	if _, err := fmt.Fprintf(t, "echo PID%d-$$.$(cut -d' ' -f22 /proc/$$/stat)-D\r", n); err != nil {
		return "", err
	}
	// The echo shows "PIDn-$$.$(cut…)-D"; the output shows the numbers.
	var acc []byte
	buf := make([]byte, 4096)
	prefix := fmt.Sprintf("PID%d-", n)
	for {
		k, err := t.Read(buf)
		acc = append(acc, buf[:k]...)
		if i := bytes.Index(acc, []byte(prefix)); i >= 0 {
			for rest := acc[i:]; ; {
				j := bytes.Index(rest, []byte(prefix))
				if j < 0 {
					break
				}
				rest = rest[j+len(prefix):]
				if end := bytes.Index(rest, []byte("-D")); end > 0 && rest[0] != '$' {
					return string(rest[:end]), nil
				}
			}
		}
		if err != nil {
			return "", err
		}
		if len(acc) > 1<<20 {
			acc = acc[len(acc)-4096:]
		}
	}
}

// pump reads a client in its own goroutine, so that waiting for output can
// time out without a deadline on the connection (which would end an SSH
// connection for good).
type pump struct {
	ch   chan []byte   // chunks read; closed when the client's stream ends
	done chan struct{} // closed when the goroutine has returned
	hay  []byte
}

func startPump(t term) *pump {
	p := &pump{ch: make(chan []byte, 64), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer close(p.ch)
		buf := make([]byte, 32<<10)
		for {
			n, err := t.Read(buf)
			if n > 0 {
				p.ch <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

// wait consumes output until m has been seen, at most d.
func (p *pump) wait(m []byte, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case b, ok := <-p.ch:
			if !ok {
				return fmt.Errorf("the client's stream ended waiting for %s (output ended %q)", m, tail(string(p.hay), 160))
			}
			keep := max(0, len(p.hay)-4096)
			p.hay = append(p.hay[keep:], b...)
			if i := bytes.Index(p.hay, m); i >= 0 {
				p.hay = p.hay[i+len(m):]
				return nil
			}
		case <-timer.C:
			return fmt.Errorf("no %s within %s (output ended %q)", m, d, tail(string(p.hay), 160))
		}
	}
}

// command types cmd with a marker and waits for the marker, at most d.
func (p *pump) command(t term, cmd string, d time.Duration) error {
	m, printf := marker()
	if _, err := t.Write([]byte(joinCmd(cmd, printf) + "\r")); err != nil {
		return err
	}
	return p.wait(m, d)
}

// sync waits, at most d, until the shell answers: a shell that has just
// started may discard what was typed before it set up its terminal, so
// probes are repeated until one is answered.
func (p *pump) sync(t term, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := p.command(t, "", 2*time.Second)
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}

// stop discards output until the client's stream ends (after the
// caller closed it).
func (p *pump) stop() {
	for range p.ch {
	}
	<-p.done
}
