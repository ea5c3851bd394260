package exechost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/internal/names"
	"github.com/termgate/termgate/sessions"
)

// connHooks classify the end of a connection (see HeldShell).
type connHooks struct {
	// Lost is Read's error when the connection ended without the holder
	// saying why (the instance stopped, or only the connection broke).
	Lost func() error
	// Exited is Read's error when the holder reported that the shell
	// exited with code (a signal exit may be the instance stopping).
	Exited func(code int) error
}

// conn is a gateway's connection to the holder of one instance's session
// (the holder protocol of package holder over one exec stream): a
// sessions.HeldProcess but for Kill, which HeldShell adds.
type conn struct {
	name      string // the instance, for errors
	gatewayID string
	c         *holder.Client
	state     sessions.HeldState
	hooks     connHooks

	clients  atomic.Int64
	wake     chan struct{} // the clients writer has a new count to send
	stop     chan struct{}
	wg       sync.WaitGroup
	released atomic.Bool
	once     sync.Once
}

// newConn takes over c, a connection whose hello was answered with rep and
// replay, and starts the goroutine that sends the client count (clients
// to begin with); Release stops it.
func newConn(name, gatewayID string, c *holder.Client, rep holder.ReplayMsg, replay []byte, clients int, hooks connHooks) *conn {
	h := c.Hello
	cn := &conn{
		name: name, gatewayID: gatewayID, c: c, hooks: hooks,
		wake: make(chan struct{}, 1), stop: make(chan struct{}),
		state: sessions.HeldState{
			Session: rep.Session, Offset: rep.Start, Replay: replay,
			Size: sessions.Size{Cols: h.Cols, Rows: h.Rows}, Login: h.Login,
		},
	}
	if h.Created > 0 {
		cn.state.Created = time.UnixMilli(h.Created)
	}
	cn.clients.Store(int64(clients))
	cn.wg.Go(cn.sendClients)
	return cn
}

// Client is the holder connection itself (for End).
func (cn *conn) Client() *holder.Client { return cn.c }

// sendClients sends the latest client count whenever it changes, so that
// Clients never blocks on the connection.
func (cn *conn) sendClients() {
	for {
		select {
		case <-cn.stop:
			return
		case <-cn.wake:
			_ = cn.c.Clients(int(cn.clients.Load()))
		}
	}
}

func (cn *conn) Held() sessions.HeldState { return cn.state }

func (cn *conn) Clients(n int) {
	cn.clients.Store(int64(n))
	select {
	case cn.wake <- struct{}{}:
	default:
	}
}

// Read returns the shell's output, and the holder's endings as the
// registry's causes: a reset by another gateway, an idle reap, the shell's
// exit (connHooks.Exited), a connection lost (connHooks.Lost), io.EOF once
// released.
func (cn *conn) Read(b []byte) (int, error) {
	n, err := cn.c.Read(b)
	if err == nil {
		return n, nil
	}
	var reset *holder.ErrReset
	switch {
	case errors.As(err, &reset):
		return n, &sessions.ResetError{OldSession: reset.OldSession, NewSession: reset.NewSession, By: "another gateway"}
	case cn.released.Load():
		return n, io.EOF
	case errors.Is(err, io.EOF):
		m, ok := cn.c.Exit()
		switch {
		case !ok:
			return n, cn.hooks.Lost()
		case m.Cause == "idle":
			return n, sessions.ErrIdle
		case m.Cause == "":
			return n, cn.hooks.Exited(m.Code)
		}
		return n, fmt.Errorf("the holder in %q ended the session: %s", cn.name, m.Cause)
	}
	return n, fmt.Errorf("holder connection in %q: %w", cn.name, err)
}

func (cn *conn) Write(b []byte) (int, error) {
	n, err := cn.c.Write(b)
	if err != nil {
		return n, fmt.Errorf("write to the holder in %q: %w", cn.name, err)
	}
	return n, nil
}

func (cn *conn) Resize(_ context.Context, size sessions.Size) error {
	if !size.Valid() {
		return fmt.Errorf("resize shell in %q to %dx%d: %w", cn.name, size.Cols, size.Rows, sessions.ErrBadSize)
	}
	if err := cn.c.Resize(context.Background(), size.Cols, size.Rows); err != nil {
		return fmt.Errorf("resize the held shell in %q: %w", cn.name, err)
	}
	return nil
}

// Wait returns the held shell's exit status once Read ended with it.
func (cn *conn) Wait(context.Context) (int, error) {
	if m, ok := cn.c.Exit(); ok {
		return m.Code, nil
	}
	return -1, fmt.Errorf("the connection to the holder in %q was lost before the session ended", cn.name)
}

// Reset has the holder kill the session and start a fresh shell as id;
// every gateway's Read then ends with a *sessions.ResetError.
func (cn *conn) Reset(_ context.Context, id string) error {
	if !names.ValidSessionID(id) {
		return fmt.Errorf("reset the held session in %q: invalid session id %q", cn.name, id)
	}
	if err := cn.c.Reset(id, cn.gatewayID); err != nil {
		return fmt.Errorf("reset the held session in %q: %w", cn.name, err)
	}
	return nil
}

// Release drops the connection and leaves the shell to its holder.
func (cn *conn) Release() error {
	cn.once.Do(func() {
		cn.released.Store(true)
		close(cn.stop)
		cn.wg.Wait()
		_ = cn.c.Close()
	})
	return nil
}
