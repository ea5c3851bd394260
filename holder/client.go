package holder

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// Client is a gateway's end of a connection to a holder, over any byte
// stream (an exec's stdin/stdout bridged by "termgate-holder attach"). Its
// Read, Write, Resize, Wait and Kill have the meaning of a
// sessions.Process, so the session layer treats a held shell like any
// other; Read is for one goroutine, the others may be called concurrently.
type Client struct {
	rw    io.ReadWriteCloser
	r     *Reader
	Hello HelloMsg // the holder's hello: session, shell PID, offset, size

	wmu sync.Mutex // serializes frames on rw

	pending     []byte // output of the current frame not yet returned by Read
	next        int64  // offset of the next output byte Read returns; -1 until known
	exit        chan ExitMsg
	replayStart int64 // offset of the replay's first byte
	replayEnd   int64 // offset after the replay
	lastErr     atomic.Pointer[ErrorMsg]
	once        sync.Once
}

// ErrReset is returned by Read when the session was reset (by this or
// another gateway): the holder now holds ResetMsg.NewSession.
type ErrReset struct{ ResetMsg }

func (e *ErrReset) Error() string {
	return fmt.Sprintf("held session %s was reset into %s", e.OldSession, e.NewSession)
}

// Dial says hello to the holder on rw, asks for the replay from since when
// session is still the held one (else the normal replay), and returns the
// client with the replay's header. A holder of another protocol version
// gives a *VersionError; rw is then closed and the holder left alone.
func Dial(rw io.ReadWriteCloser, gateway, session string, since int64) (*Client, ReplayMsg, error) {
	return DialClients(rw, gateway, session, since, 0)
}

// DialClients is Dial for a gateway that already has clients on the
// session (see HelloMsg.Clients).
func DialClients(rw io.ReadWriteCloser, gateway, session string, since int64, clients int) (*Client, ReplayMsg, error) {
	c := &Client{rw: rw, r: NewReader(bufio.NewReaderSize(rw, 64<<10)), exit: make(chan ExitMsg, 1), next: -1}
	fail := func(err error) (*Client, ReplayMsg, error) {
		rw.Close()
		return nil, ReplayMsg{}, err
	}
	if err := c.send(mustFrame(TypeHello, HelloMsg{Proto: Version, Gateway: gateway, Clients: clients})); err != nil {
		return fail(err)
	}
	f, err := c.r.ReadFrame()
	if err != nil {
		return fail(fmt.Errorf("holder hello: %w", err))
	}
	if f.Type == TypeError {
		var m ErrorMsg
		_ = DecodeControl(f, &m)
		if m.Proto != 0 && m.Proto != Version {
			return fail(&VersionError{Theirs: m.Proto, Ours: Version})
		}
		return fail(fmt.Errorf("holder refused: %s", m.Message))
	}
	if c.Hello, err = CheckHello(f); err != nil {
		return fail(err)
	}
	if err := c.send(mustFrame(TypeAttach, AttachMsg{Session: session, Since: since})); err != nil {
		return fail(err)
	}
	for {
		f, err := c.r.ReadFrame()
		if err != nil {
			return fail(fmt.Errorf("holder replay: %w", err))
		}
		if f.Type != TypeReplay {
			continue // output queued before our attach is not ours
		}
		var rep ReplayMsg
		if err := DecodeControl(f, &rep); err != nil {
			return fail(err)
		}
		if rep.Start < 0 || rep.Start > rep.Offset {
			return fail(fmt.Errorf("holder replay from %d to %d", rep.Start, rep.Offset))
		}
		c.replayStart, c.replayEnd = rep.Start, rep.Offset
		return c, rep, nil
	}
}

func mustFrame(typ byte, m any) []byte {
	b, err := ControlFrame(typ, m)
	if err != nil {
		panic(err) // only fixed message types are encoded
	}
	return b
}

func (c *Client) send(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.rw.Write(frame)
	return err
}

// Read returns output (the replay first, then live output). It returns
// io.EOF once the session ended (Wait then has the exit), and an *ErrReset
// when the session was reset.
func (c *Client) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		f, err := c.r.ReadFrame()
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, fmt.Errorf("holder connection: %w", err)
			}
			return 0, err
		}
		switch f.Type {
		case TypeOutput:
			off, data, err := DecodeOutput(f)
			if err != nil {
				return 0, err
			}
			if c.next >= 0 && off != c.next {
				return 0, fmt.Errorf("holder output at offset %d, want %d", off, c.next)
			}
			c.next = off + int64(len(data))
			// No copy: the frame's buffer is reused only by the next
			// ReadFrame, which comes once pending is empty.
			c.pending = data
		case TypeExit:
			var m ExitMsg
			if err := DecodeControl(f, &m); err != nil {
				return 0, err
			}
			c.exit <- m
			return 0, io.EOF
		case TypeReset:
			var m ResetMsg
			if err := DecodeControl(f, &m); err != nil {
				return 0, err
			}
			return 0, &ErrReset{m}
		case TypeError:
			// A refused request (a bad size, input the shell did not
			// take) does not end the stream: the holder says so when the
			// session ends.
			var m ErrorMsg
			_ = DecodeControl(f, &m)
			c.lastErr.Store(&m)
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// ReadReplay returns the replay Dial announced (its ReplayMsg's Offset-Start
// bytes), after which Read returns live output only. Call it before the
// first Read, or not at all (Read then returns the replay first).
func (c *Client) ReadReplay() ([]byte, error) {
	want := c.replayEnd - c.replayStart
	buf := make([]byte, 0, want)
	for int64(len(buf)) < want {
		n, err := c.Read(buf[len(buf):want])
		buf = buf[:len(buf)+n]
		if err != nil {
			return buf, fmt.Errorf("holder replay: %w", err)
		}
	}
	return buf, nil
}

// Offset is the number of the next output byte Read will return: a
// gateway that reconnects resumes from it.
func (c *Client) Offset() int64 {
	if c.next < 0 {
		return c.replayEnd
	}
	return c.next - int64(len(c.pending))
}

// Write sends input for the shell.
func (c *Client) Write(p []byte) (int, error) {
	for off := 0; off < len(p); {
		n := min(len(p)-off, MaxPayload)
		frame, _ := AppendFrame(nil, TypeInput, p[off:off+n])
		if err := c.send(frame); err != nil {
			return off, err
		}
		off += n
	}
	return len(p), nil
}

// Resize changes the held terminal's size.
func (c *Client) Resize(_ context.Context, cols, rows int) error {
	return c.send(ResizeFrame(cols, rows))
}

// Clients tells the holder how many clients this gateway has attached, for
// its idle timer.
func (c *Client) Clients(n int) error { return c.send(ClientsFrame(n)) }

// Reset asks the holder to kill the session and start a fresh shell under
// newSession.
func (c *Client) Reset(newSession, by string) error {
	return c.send(mustFrame(TypeReset, ResetMsg{NewSession: newSession, By: by}))
}

// Wait returns the exit status once Read returned io.EOF.
func (c *Client) Wait(ctx context.Context) (ExitMsg, error) {
	select {
	case m := <-c.exit:
		c.exit <- m
		return m, nil
	case <-ctx.Done():
		return ExitMsg{}, ctx.Err()
	}
}

// LastError returns the holder's last refusal of a request ("" if none).
func (c *Client) LastError() string {
	if m := c.lastErr.Load(); m != nil {
		return m.Message
	}
	return ""
}

// Exit returns how the session ended, once Read returned io.EOF for an
// exit frame; ok is false otherwise (say, the connection was lost).
func (c *Client) Exit() (m ExitMsg, ok bool) {
	select {
	case m = <-c.exit:
		c.exit <- m
		return m, true
	default:
		return ExitMsg{}, false
	}
}

// End asks the holder to end the session (kill the shell and everything it
// started, then exit).
func (c *Client) End() error { return c.send(mustFrame(TypeEnd, struct{}{})) }

// Close drops the connection; the held session goes on.
func (c *Client) Close() error {
	var err error
	c.once.Do(func() { err = c.rw.Close() })
	return err
}
