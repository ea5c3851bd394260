package holder

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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

	pending   []byte // output of the current frame not yet returned by Read
	next      int64  // offset of the next output byte the holder sends
	exit      chan ExitMsg
	ended     error  // Read's final error once the stream ended (exit, reset, protocol error)
	session   string // the session this connection holds (the replay's)
	keepFrom  int64  // offset of the replay's first byte ReadReplay keeps (see ReplayLimit)
	replayEnd int64  // offset after the replay
	lastErr   atomic.Pointer[ErrorMsg]
	once      sync.Once
}

// ErrReset is returned by Read when the session was reset (by this or
// another gateway): the holder now holds ResetMsg.NewSession.
type ErrReset struct{ ResetMsg }

func (e *ErrReset) Error() string {
	return fmt.Sprintf("held session %s was reset into %s", e.OldSession, e.NewSession)
}

// Dial says hello to the holder on rw, checks that the holder has key (the
// key of the holder this gateway's deployment started: see proof.go), proves
// that it has it too, asks for the replay from since when session is still
// the held one (else the normal replay), and returns the client with the
// replay's header. A holder of another protocol version gives a
// *VersionError, one without a valid proof an error wrapping ErrForeign;
// rw is then closed and the holder left alone.
func Dial(rw io.ReadWriteCloser, key []byte, gateway, session string, since int64) (*Client, ReplayMsg, error) {
	return DialClients(rw, key, gateway, session, since, 0)
}

// DialClients is Dial for a gateway that already has clients on the
// session (see HelloMsg.Clients).
func DialClients(rw io.ReadWriteCloser, key []byte, gateway, session string, since int64, clients int) (*Client, ReplayMsg, error) {
	c := &Client{rw: rw, r: NewReader(bufio.NewReaderSize(rw, 64<<10)), exit: make(chan ExitMsg, 1)}
	fail := func(err error) (*Client, ReplayMsg, error) {
		rw.Close()
		return nil, ReplayMsg{}, err
	}
	if len(key) != KeyLen {
		return fail(fmt.Errorf("holder key of %d bytes, want %d", len(key), KeyLen))
	}
	nonce := newNonce()
	if err := c.send(mustFrame(TypeHello, HelloMsg{Proto: Version, Gateway: gateway, Clients: clients, Nonce: nonce})); err != nil {
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
		return fail(fmt.Errorf("holder refused: %s", clip(m.Message)))
	}
	if c.Hello, err = CheckHello(f); err != nil {
		return fail(err)
	}
	// The proof first: nothing a holder says is looked at before it
	// proved whose it is.
	if !validNonce(c.Hello.Nonce) || !proofOK(c.Hello.Proof, HolderProof(key, nonce, c.Hello.Nonce)) {
		return fail(ErrForeign)
	}
	if err := checkHelloFields(c.Hello); err != nil {
		return fail(err)
	}
	attach := AttachMsg{Session: session, Since: since, Proof: gatewayProof(key, nonce, c.Hello.Nonce)}
	if err := c.send(mustFrame(TypeAttach, attach)); err != nil {
		return fail(err)
	}
	for {
		f, err := c.r.ReadFrame()
		if err != nil {
			return fail(fmt.Errorf("holder replay: %w", err))
		}
		if f.Type == TypeError {
			var m ErrorMsg
			_ = DecodeControl(f, &m)
			return fail(fmt.Errorf("holder refused the attach: %s", clip(m.Message)))
		}
		if f.Type != TypeReplay {
			continue // output queued before our attach is not ours
		}
		var rep ReplayMsg
		if err := DecodeControl(f, &rep); err != nil {
			return fail(err)
		}
		if err := checkReplay(rep); err != nil {
			return fail(err)
		}
		c.session = rep.Session
		c.replayEnd, c.next = rep.Offset, rep.Start
		// A replay longer than this gateway keeps (a holder started by a
		// gateway with a larger --buffer-size) is read, but only its end
		// is kept: the caller is told it starts there.
		c.keepFrom = max(rep.Start, rep.Offset-ReplayLimit())
		rep.Start = c.keepFrom
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
// when the session was reset; a frame that breaks the protocol ends the
// stream with an error wrapping ErrProtocol. Once Read returned an error it
// returns the same one again without reading.
func (c *Client) Read(p []byte) (int, error) {
	if err := c.fill(); err != nil {
		return 0, err
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// fill reads frames until some output is pending, or the stream ends.
func (c *Client) fill() error {
	for len(c.pending) == 0 {
		if c.ended != nil {
			return c.ended
		}
		data, err := c.frame()
		if err != nil {
			c.ended = err
			return err
		}
		c.pending = data
	}
	return nil
}

// frame reads one frame and returns its output (nil for a frame that
// carries none), or why the stream ended.
func (c *Client) frame() ([]byte, error) {
	f, err := c.r.ReadFrame()
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("holder connection: %w", err)
		}
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		return nil, err
	}
	switch f.Type {
	case TypeOutput:
		off, data, err := DecodeOutput(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		if off != c.next {
			return nil, fmt.Errorf("%w: output at offset %d, want %d", ErrProtocol, off, c.next)
		}
		if off > math.MaxInt64-int64(len(data)) {
			return nil, fmt.Errorf("%w: output offset %d overflows", ErrProtocol, off)
		}
		c.next = off + int64(len(data))
		// No copy: the frame's buffer is reused only by the next
		// ReadFrame, which comes once pending is empty.
		return data, nil
	case TypeExit:
		var m ExitMsg
		if err := DecodeControl(f, &m); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		m.Cause = clip(m.Cause)
		c.exit <- m // once: the stream ends here
		return nil, io.EOF
	case TypeReset:
		var m ResetMsg
		if err := DecodeControl(f, &m); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		if err := c.checkReset(m); err != nil {
			return nil, err
		}
		m.By = clip(m.By)
		return nil, &ErrReset{m}
	case TypeError:
		// A refused request (a bad size, input the shell did not
		// take) does not end the stream: the holder says so when the
		// session ends.
		var m ErrorMsg
		_ = DecodeControl(f, &m)
		m.Message = clip(m.Message)
		c.lastErr.Store(&m)
	}
	return nil, nil
}

// ReadReplay returns the replay Dial announced (its ReplayMsg's Offset-Start
// bytes), after which Read returns live output only. Call it before the
// first Read, or not at all (Read then returns the replay first). The
// replay is read as it arrives, never allocated ahead from what the holder
// announced, and holds at most ReplayLimit bytes.
func (c *Client) ReadReplay() ([]byte, error) {
	buf := make([]byte, 0, min(c.replayEnd-c.keepFrom, 64<<10))
	for off := c.Offset(); off < c.replayEnd; off = c.Offset() {
		if err := c.fill(); err != nil {
			return buf, fmt.Errorf("holder replay: %w", err)
		}
		data := c.pending[:min(int64(len(c.pending)), c.replayEnd-off)]
		c.pending = c.pending[len(data):]
		if skip := c.keepFrom - off; skip > 0 {
			data = data[min(skip, int64(len(data))):]
		}
		buf = append(buf, data...)
	}
	return buf, nil
}

// Offset is the number of the next output byte Read will return: a
// gateway that reconnects resumes from it.
func (c *Client) Offset() int64 { return c.next - int64(len(c.pending)) }

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
