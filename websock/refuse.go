package websock

import (
	"io"
	"net"
	"time"
)

// A connection over the caps used to get its 503 written and be closed at
// once, with its request unread: the kernel then answers with a reset,
// which usually destroys the 503 before the client reads it (issue 20 D5:
// 98-99 % of refusals were a bare TCP reset). Now a refusal is a short
// conversation of its own: the 503 (with Retry-After), a FIN, then the
// request read and discarded until the client hangs up or refuseLinger
// passes, so that the client reads the answer. At most maxRefusing run at
// once; beyond that (a flood) the old best-effort close stands.
const (
	refuseLinger = time.Second
	maxRefusing  = 64
)

// refuse answers a connection over the caps (plain HTTP: 503) and closes
// it, in a goroutine of its own when one is free; Server.Shutdown waits
// for them (connLimiter.waitRefusals).
func (ll *limitedListener) refuseConn(nc net.Conn) {
	if !ll.plain {
		_ = nc.Close() // over TLS there is no plain answer to give
		return
	}
	l := ll.l
	l.mu.Lock()
	spare := !l.closed && l.refusing < maxRefusing
	if spare {
		l.refusing++
		l.refusals.Add(1)
	}
	l.mu.Unlock()
	if !spare {
		// Best effort, never waiting: the 503 fits in the socket buffer.
		_ = nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = nc.Write([]byte(msgTooManyConns))
		_ = nc.Close()
		return
	}
	go func() {
		defer func() {
			l.mu.Lock()
			l.refusing--
			l.mu.Unlock()
			l.refusals.Done()
		}()
		_ = nc.SetDeadline(time.Now().Add(refuseLinger))
		if _, err := nc.Write([]byte(msgTooManyConns)); err == nil {
			if cw, ok := nc.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(nc, 64<<10))
		}
		_ = nc.Close()
	}()
}

// waitRefusals stops new refusal goroutines and waits for those running
// (each ends within refuseLinger).
func (l *connLimiter) waitRefusals() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.refusals.Wait()
}
