package websock

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
)

// Connection caps of the HTTP listener (issue 9 item 11c: one address held
// 400 idle keep-alive connections). Every TCP connection counts, WebSockets
// included, per client address (clientKey: an IPv4 address or an IPv6 /64)
// and in total. A connection over a cap first takes the place of the
// longest-idle one (a keep-alive connection between requests, or one that
// has not sent a request yet) of its own address, or, for the total, of any
// address; if there is none it is refused: over plain HTTP with a 503 that
// says why and Retry-After (refuse.go), over TLS by closing it. A
// WebSocket leaves the count as soon as its client is gone (released). "Longest-idle" is by age: of the idle
// connections, the one accepted first.
const (
	defaultMaxConnsPerAddr = 64
	defaultMaxConns        = 1024
)

// connLimiter counts the served connections. Lock order: connLimiter.mu,
// then nothing (closing a connection happens outside it).
type connLimiter struct {
	perAddr, total int
	log            func(msg string, args ...any)

	mu     sync.Mutex // guards n, seq, byAddr, every limitedConn.idle, refusing and closed
	n      int
	seq    uint64
	byAddr map[netip.Prefix]map[*limitedConn]struct{}

	refusing int            // refusals answering now (refuse.go)
	closed   bool           // no more refusal goroutines: the server shuts down
	refusals sync.WaitGroup // the refusal goroutines
}

// limitedConn is a counted connection. idle is false while a request is
// being served or once the connection was hijacked (a WebSocket), true
// while it waits for a request (its first included).
type limitedConn struct {
	net.Conn
	l   *connLimiter
	key netip.Prefix
	seq uint64 // accept order

	once sync.Once
	idle bool // guarded by l.mu
}

func newConnLimiter(perAddr, total int, log func(string, ...any)) *connLimiter {
	return &connLimiter{perAddr: perAddr, total: total, log: log, byAddr: map[netip.Prefix]map[*limitedConn]struct{}{}}
}

// admit counts c in, making room by closing an idle connection if it must;
// false when there is no room.
func (l *connLimiter) admit(c *limitedConn) bool {
	var victim *limitedConn
	l.mu.Lock()
	same := l.byAddr[c.key]
	switch {
	case len(same) >= l.perAddr:
		victim = oldestIdle(same)
	case l.n >= l.total:
		for _, conns := range l.byAddr {
			if v := oldestIdle(conns); v != nil && (victim == nil || v.seq < victim.seq) {
				victim = v
			}
		}
	}
	full := len(same) >= l.perAddr || l.n >= l.total
	if full && victim == nil {
		l.mu.Unlock()
		return false
	}
	if victim != nil {
		l.removeLocked(victim)
	}
	if same == nil {
		same = map[*limitedConn]struct{}{}
		l.byAddr[c.key] = same
	}
	same[c] = struct{}{}
	l.n++
	l.seq++
	c.seq, c.idle = l.seq, true
	l.mu.Unlock()
	if victim != nil {
		victim.closeEvicted()
	}
	return true
}

func oldestIdle(conns map[*limitedConn]struct{}) *limitedConn {
	var v *limitedConn
	for c := range conns {
		if c.idle && (v == nil || c.seq < v.seq) {
			v = c
		}
	}
	return v
}

// removeLocked uncounts c (once: a victim is uncounted when it is chosen,
// and again when the server closes it).
func (l *connLimiter) removeLocked(c *limitedConn) {
	conns := l.byAddr[c.key]
	if _, ok := conns[c]; !ok {
		return
	}
	delete(conns, c)
	if len(conns) == 0 {
		delete(l.byAddr, c.key)
	}
	l.n--
}

// state follows http.Server.ConnState: only a connection waiting for a
// request may be closed to make room.
func (l *connLimiter) state(nc net.Conn, st http.ConnState) {
	c := asLimited(nc)
	if c == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateIdle:
		c.idle = true
	case http.StateActive, http.StateHijacked:
		c.idle = false
	case http.StateClosed:
		l.removeLocked(c)
	}
}

// asLimited finds the counted connection under a served one (which is a
// *tls.Conn over TLS).
func asLimited(nc net.Conn) *limitedConn {
	for nc != nil {
		switch c := nc.(type) {
		case *limitedConn:
			return c
		case interface{ NetConn() net.Conn }:
			nc = c.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// released uncounts a served connection whose client is gone (the
// WebSocket's read loop saw its close, FIN or reset) before the teardown
// that follows closes it: a client that reconnects at once must not find
// its own last connection still counted against it (issue 20 D5).
func released(nc net.Conn) {
	if c := asLimited(nc); c != nil {
		c.l.mu.Lock()
		c.l.removeLocked(c)
		c.l.mu.Unlock()
	}
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.removeLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// closeEvicted closes a connection that made room for a newer one.
func (c *limitedConn) closeEvicted() {
	c.once.Do(func() {
		c.l.log("closing an idle HTTP connection to make room", "remote", c.RemoteAddr().String())
		_ = c.Conn.Close()
	})
}

// limitedListener applies a connLimiter to Accept.
type limitedListener struct {
	net.Listener
	l      *connLimiter
	plain  bool // refusals get an HTTP 503 (not over TLS)
	refuse func(addr string)
}

func (ll *limitedListener) Accept() (net.Conn, error) {
	for {
		nc, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &limitedConn{Conn: nc, l: ll.l, key: clientKey(nc.RemoteAddr().String())}
		if ll.l.admit(c) {
			return c, nil
		}
		ll.refuse(nc.RemoteAddr().String())
		ll.refuseConn(nc)
	}
}

const msgTooManyConns = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Retry-After: 10\r\nConnection: close\r\nContent-Length: 80\r\n\r\n" +
	"too many connections from your address (or to the gateway): close some and retry"
