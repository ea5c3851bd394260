package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/termgate/termgate/holder"
)

// The remote-forwarding tools (ssh -R), one listener exec and one fetch
// exec per accepted connection:
//
//	termgate-holder listen [--install-as PATH] tcp HOST:PORT | unix PATH
//	    listens (port 0: the kernel picks), writes holder.ToolReady, then
//	    "bound ADDR FETCH" (ADDR the bound HOST:PORT or PATH, FETCH the
//	    abstract unix socket fetch connects to), then one line
//	    "conn TOKEN HOST PORT" per accepted connection (the peer's
//	    address; "- 0" on a unix socket). Its stdin takes "drop TOKEN"
//	    lines (the client refused the channel); its end (the gateway
//	    closed the listener or went away) ends the tool: the listener is
//	    closed (a unix socket's file removed) with every connection not
//	    fetched.
//	termgate-holder fetch [--install-as PATH] FETCH TOKEN
//	    takes the accepted connection TOKEN from the listener (its
//	    descriptor passed over FETCH) and serves it exactly as dial does:
//	    stdin to it, it to stdout in frames, each side's end passed on.
//
// The connection itself never goes through the listener's stream: each
// has an exec of its own, so a slow client stalls only its own channel
// (the engine's and SSH's flow control per stream), and half-closes are
// dial's. FETCH is an abstract socket (Linux: in the instance's network
// namespace, no file, gone with the listener); a TOKEN is 128 random bits
// and good once, so nothing else in the instance can take a connection.

// Bounds: the instance may connect as often as it likes, the gateway
// fetches what the client accepts.
const (
	maxPending   = 64               // accepted connections not yet fetched
	pendingLimit = 30 * time.Second // a connection not fetched by then is closed
	fetchReadMax = 64               // a fetcher's token line
	fetchTimeout = 10 * time.Second
)

type pendingConn struct {
	conn  net.Conn
	timer *time.Timer
}

// listener is one listen tool's state.
type listener struct {
	out     io.Writer
	outMu   sync.Mutex // serializes the lines written to out
	mu      sync.Mutex // guards pending
	pending map[string]*pendingConn
}

// listen runs the listen tool: see the comment above.
func listen(args []string, in io.Reader, out io.WriteCloser) error {
	if len(args) != 2 {
		return errors.New("listen: want tcp HOST:PORT or unix PATH")
	}
	var ln net.Listener
	var err error
	switch args[0] {
	case "tcp":
		if _, _, err := net.SplitHostPort(args[1]); err != nil {
			return fmt.Errorf("listen %q: want HOST:PORT: %w", args[1], err)
		}
		ln, err = net.Listen("tcp", args[1])
	case "unix":
		if err := checkSocketPath(args[1]); err != nil {
			return err
		}
		// 0600, as OpenSSH's StreamLocalBindMask: only the login's processes
		// connect; the tool does nothing else that creates files.
		old := syscall.Umask(0o177)
		ln, err = net.Listen("unix", args[1])
		syscall.Umask(old)
	default:
		return fmt.Errorf("listen: unknown network %q (want tcp or unix)", args[0])
	}
	if err != nil {
		return err
	}
	defer ln.Close()
	fetchName := "@termgate-fetch-" + token()
	fl, err := net.Listen("unix", fetchName)
	if err != nil {
		return fmt.Errorf("listen: the fetch socket: %w", err)
	}
	defer fl.Close()
	l := &listener{out: out, pending: map[string]*pendingConn{}}
	bound := args[1]
	if args[0] == "tcp" {
		bound = ln.Addr().String()
	}
	if err := l.line(holder.ToolReady); err != nil {
		return err
	}
	if err := l.line("bound " + bound + " " + fetchName); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { l.serveFetch(fl) })
	acceptErr := make(chan error, 1)
	wg.Go(func() { acceptErr <- l.accept(ln) })
	// stdin: "drop TOKEN" lines until its end, the listener's end.
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 256), 256)
	for sc.Scan() {
		if tok, ok := strings.CutPrefix(sc.Text(), "drop "); ok {
			l.take(tok, true)
		}
	}
	_ = ln.Close()
	_ = fl.Close()
	wg.Wait()
	l.mu.Lock()
	for tok, p := range l.pending {
		p.timer.Stop()
		_ = p.conn.Close()
		delete(l.pending, tok)
	}
	l.mu.Unlock()
	_ = out.Close()
	if err := <-acceptErr; err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// checkSocketPath refuses a path that cannot name a unix socket.
func checkSocketPath(p string) error {
	if p == "" || len(p) > 107 || strings.ContainsRune(p, 0) || p[0] == '@' {
		return fmt.Errorf("unix socket %q: want a path of 1-107 bytes", p)
	}
	return nil
}

func (l *listener) line(s string) error {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	_, err := io.WriteString(l.out, s+"\n")
	return err
}

// accept takes the instance's connections until the listener closes;
// each waits for its fetch (pendingLimit at most).
func (l *listener) accept(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		host, port := "-", 0
		if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			host, port = ta.IP.String(), ta.Port
		}
		tok := token()
		l.mu.Lock()
		if len(l.pending) >= maxPending {
			l.mu.Unlock()
			_ = c.Close() // the client is not taking them: shed
			continue
		}
		l.pending[tok] = &pendingConn{conn: c, timer: time.AfterFunc(pendingLimit, func() { l.take(tok, true) })}
		l.mu.Unlock()
		if err := l.line("conn " + tok + " " + host + " " + strconv.Itoa(port)); err != nil {
			return err // the gateway is gone
		}
	}
}

// take removes the pending connection tok and returns it, or closes it
// (drop).
func (l *listener) take(tok string, drop bool) net.Conn {
	l.mu.Lock()
	p := l.pending[tok]
	delete(l.pending, tok)
	l.mu.Unlock()
	if p == nil {
		return nil
	}
	p.timer.Stop()
	if drop {
		_ = p.conn.Close()
		return nil
	}
	return p.conn
}

// serveFetch hands connections to fetch tools, one at a time (each is a
// line and a sendmsg).
func (l *listener) serveFetch(fl net.Listener) {
	for {
		c, err := fl.Accept()
		if err != nil {
			return
		}
		l.handOver(c.(*net.UnixConn))
		_ = c.Close()
	}
}

func (l *listener) handOver(uc *net.UnixConn) {
	_ = uc.SetDeadline(time.Now().Add(fetchTimeout))
	buf := make([]byte, fetchReadMax)
	n, err := io.ReadAtLeast(uc, buf, 1)
	if err != nil {
		return
	}
	tok, _, ok := strings.Cut(string(buf[:n]), "\n")
	if !ok {
		return
	}
	c := l.take(tok, false)
	if c == nil {
		return
	}
	defer c.Close() // the fetcher has its own copy once sent
	f, err := c.(interface{ File() (*os.File, error) }).File()
	if err != nil {
		return
	}
	defer f.Close()
	_, _, _ = uc.WriteMsgUnix([]byte{'c'}, syscall.UnixRights(int(f.Fd())), nil)
}

// fetch runs the fetch tool: see the comment above.
func fetch(args []string, in io.Reader, out io.WriteCloser) error {
	if len(args) != 2 || !strings.HasPrefix(args[0], "@termgate-fetch-") {
		return errors.New("fetch: want FETCH-SOCKET TOKEN")
	}
	conn, err := fetchConn(args[0], args[1])
	if err != nil {
		return err
	}
	return serveForwarded(conn, in, out)
}

func fetchConn(sock, tok string) (net.Conn, error) {
	c, err := net.DialTimeout("unix", sock, fetchTimeout)
	if err != nil {
		return nil, fmt.Errorf("fetch: the listener is gone: %w", err)
	}
	uc := c.(*net.UnixConn)
	defer uc.Close()
	_ = uc.SetDeadline(time.Now().Add(fetchTimeout))
	if _, err := io.WriteString(uc, tok+"\n"); err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	b := make([]byte, 1)
	oob := make([]byte, syscall.CmsgSpace(4))
	_, oobn, _, _, err := uc.ReadMsgUnix(b, oob)
	if err != nil || oobn == 0 {
		return nil, fmt.Errorf("fetch: the connection is gone (closed by its peer, or not fetched in time): %v", err)
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errors.New("fetch: no descriptor passed")
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			_ = syscall.Close(fd)
		}
		return nil, errors.New("fetch: no descriptor passed")
	}
	f := os.NewFile(uintptr(fds[0]), "forwarded")
	defer f.Close()
	return net.FileConn(f)
}

// token is 128 random bits in hex.
func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
