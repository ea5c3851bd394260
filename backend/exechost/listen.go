package exechost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// Remote forwarding (ssh -R) and unix sockets (-L to a socket), through
// the holder's dial, listen and fetch tools (cmd/termgate-holder/listen.go):
// one listen exec per listener, whose stream carries only its control
// lines, and one fetch exec per accepted connection, which the listener
// hands the connection's descriptor to. See doc.go.

// maxListenLine bounds a line of the listen tool (the instance is not
// trusted): "conn", a 32-digit token, an address and a port.
const maxListenLine = 256

// DialUnix connects to the unix socket path inside the instance (termgate-holder
// dial unix:PATH), as Dial does to a TCP port.
func (h *Host) DialUnix(ctx context.Context, inst sessions.Instance, path string) (remote.Conn, error) {
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	return h.dialTool(ctx, inst, "dial", "unix:"+path)
}

// dialTool runs a tool whose stream is dial's (framed output), and
// translates "cannot run here" for forwarding.
func (h *Host) dialTool(ctx context.Context, inst sessions.Instance, args ...string) (remote.Conn, error) {
	s, err := h.runTool(ctx, inst, args...)
	if cannot := (*CannotHold)(nil); errors.As(err, &cannot) {
		return nil, &remote.Unavailable{Why: fmt.Sprintf("port forwarding: instance %q cannot run termgate's helper (%s); give it a writable directory that allows exec (a /tmp without noexec)", inst.Name, cannot.Why)}
	}
	if err != nil {
		return nil, err
	}
	return &dialStream{Stream: s, r: holder.NewDialReader(s)}, nil
}

// checkSocketPath refuses what cannot be a unix socket's path (the
// holder checks it again).
func checkSocketPath(p string) error {
	if p == "" || len(p) > 107 || p[0] == '@' || strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("unix socket %q: want a path of 1-107 printable bytes", p)
	}
	return nil
}

// Listen listens inside the instance (termgate-holder listen): network
// "tcp" with HOST:PORT, or "unix" with a path. The listener runs under
// ctx: its end ends the listener, as Close does.
func (h *Host) Listen(ctx context.Context, inst sessions.Instance, network, addr string) (remote.Listener, error) {
	switch network {
	case "tcp":
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("listen: %q: want HOST:PORT", addr)
		}
	case "unix":
		if err := checkSocketPath(addr); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("listen: unknown network %q", network)
	}
	s, err := h.runTool(ctx, inst, "listen", network, addr)
	if cannot := (*CannotHold)(nil); errors.As(err, &cannot) {
		return nil, &remote.Unavailable{Why: fmt.Sprintf("remote forwarding: instance %q cannot run termgate's helper (%s); give it a writable directory that allows exec (a /tmp without noexec)", inst.Name, cannot.Why)}
	}
	if err != nil {
		return nil, err
	}
	l := &toolListener{h: h, inst: inst, s: s, r: bufio.NewReaderSize(s, maxListenLine)}
	f, err := l.line()
	if err == nil && (len(f) != 3 || f[0] != "bound" || !validFetchSocket(f[2])) {
		err = fmt.Errorf("listen in %q: unexpected first line %q: not this gateway's helper", inst.Name, strings.Join(f, " "))
	}
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	if network == "tcp" {
		if _, port, perr := net.SplitHostPort(f[1]); perr != nil || !validPort(port) {
			_ = s.Close()
			return nil, fmt.Errorf("listen in %q: bound to %q: not this gateway's helper", inst.Name, f[1])
		}
	}
	l.addr, l.fetchSock = f[1], f[2]
	return l, nil
}

// toolListener is a listen tool's stream.
type toolListener struct {
	h         *Host
	inst      sessions.Instance
	s         Stream
	r         *bufio.Reader // the tool's lines; Accept's alone
	addr      string
	fetchSock string
	wmu       sync.Mutex // serializes drop lines
}

func (l *toolListener) Addr() string { return l.addr }

// Close ends the tool: its stdin's end closes the listener in the instance.
func (l *toolListener) Close() error { return l.s.Close() }

// Accept reads the next "conn TOKEN HOST PORT" line.
func (l *toolListener) Accept() (remote.Incoming, error) {
	f, err := l.line()
	if err != nil {
		return nil, err
	}
	if len(f) != 4 || f[0] != "conn" || !validToken(f[1]) || len(f[2]) > 64 || !validPort(f[3]) && f[3] != "0" {
		return nil, fmt.Errorf("listen in %q: unexpected line %q: not this gateway's helper", l.inst.Name, clipText(strings.Join(f, " "), 100))
	}
	port, _ := strconv.Atoi(f[3])
	host := f[2]
	if host == "-" {
		host = ""
	}
	return &incoming{l: l, token: f[1], host: host, port: port}, nil
}

// line reads one line of the tool's output, as fields.
func (l *toolListener) line() ([]string, error) {
	b, err := l.r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("listen in %q: a line over %d bytes: not this gateway's helper", l.inst.Name, maxListenLine)
	case errors.Is(err, io.EOF):
		if why := strings.TrimSpace(l.s.Stderr()); why != "" {
			return nil, fmt.Errorf("listen in %q ended: %s", l.inst.Name, clipText(why, 300))
		}
		return nil, fmt.Errorf("listen in %q ended: %w", l.inst.Name, io.EOF)
	case err != nil:
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

type incoming struct {
	l     *toolListener
	token string
	host  string
	port  int
}

func (c *incoming) Origin() (string, int) { return c.host, c.port }

// Fetch runs the fetch tool for the connection.
func (c *incoming) Fetch(ctx context.Context) (remote.Conn, error) {
	return c.l.h.dialTool(ctx, c.l.inst, "fetch", c.l.fetchSock, c.token)
}

// Drop tells the listener to close the connection.
func (c *incoming) Drop() {
	c.l.wmu.Lock()
	defer c.l.wmu.Unlock()
	_, _ = io.WriteString(c.l.s, "drop "+c.token+"\n")
}

func validToken(t string) bool {
	if len(t) != 32 {
		return false
	}
	return strings.Trim(t, "0123456789abcdef") == ""
}

func validFetchSocket(s string) bool {
	t, ok := strings.CutPrefix(s, "@termgate-fetch-")
	return ok && validToken(t)
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == p
}

// clipText makes text from the instance fit for an error: printable, at
// most n bytes.
func clipText(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
