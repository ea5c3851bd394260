package sshd

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/remote"
)

// relayResult is how a forwarded connection went.
type relayResult struct {
	toTarget, fromTarget int64
	cause                string
}

// closeDrainWait bounds how long the client's channel close waits for the
// bytes it sent before it to reach the target.
const closeDrainWait = 10 * time.Second

// relayForward copies bytes between the channel and the stream into the
// instance until both directions ended, then closes both. An end of input
// on one side is passed on as a half-close (the channel's EOF, the
// stream's CloseWrite), as OpenSSH does; the client closing the channel,
// an error either way or ForwardIdleTimeout without a byte moved closes
// everything. The client's close comes right after its last bytes and its
// EOF (OpenSSH's -L once the target ended first): the copy still carrying
// them is let finish (closeDrainWait at most, for a target that does not
// read), else the target would lose the end of what the client sent. Each direction copies through one 32 KiB buffer and blocks
// while its reader is slow: x/crypto's channel window bounds what a peer
// that never reads costs, and only its own channel stalls.
func (s *Server) relayForward(ch gossh.Channel, reqs <-chan *gossh.Request, conn remote.Conn) relayResult {
	var (
		res     relayResult
		causeMu sync.Mutex // guards res.cause
		last    atomic.Int64
		wg      sync.WaitGroup
		once    sync.Once
	)
	last.Store(time.Now().UnixNano())
	closeAll := func(cause string) {
		once.Do(func() {
			causeMu.Lock()
			res.cause = cause
			causeMu.Unlock()
			_ = conn.Close()
			_ = ch.Close()
		})
	}
	done := make(chan struct{})
	var toTarget, fromTarget atomic.Int64
	var halves atomic.Int32
	half := func() {
		if halves.Add(1) == 2 {
			closeAll("both sides closed")
		}
	}
	upDone := make(chan struct{})
	wg.Add(3)
	go func() { // client → instance
		defer wg.Done()
		defer close(upDone)
		_, err := io.Copy(activityWriter{conn, &toTarget, &last}, ch)
		if err != nil {
			closeAll("copy to the target failed: " + err.Error())
			return
		}
		_ = conn.CloseWrite()
		half()
	}()
	go func() { // instance → client
		defer wg.Done()
		_, err := io.Copy(activityWriter{ch, &fromTarget, &last}, conn)
		if err != nil {
			closeAll("copy from the target failed: " + err.Error())
			return
		}
		_ = ch.CloseWrite()
		half()
	}()
	go func() { // the channel's requests: none is answered; their end is the client's close
		defer wg.Done()
		for req := range reqs {
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
		t := time.NewTimer(closeDrainWait)
		defer t.Stop()
		select {
		case <-upDone: // the channel's buffer reaches its EOF after a close
		case <-t.C:
		}
		closeAll("the client closed the channel")
	}()
	go func() { wg.Wait(); close(done) }()
	s.idleWatch(&last, done, closeAll)
	<-done
	res.toTarget, res.fromTarget = toTarget.Load(), fromTarget.Load()
	causeMu.Lock()
	defer causeMu.Unlock()
	return res
}

// idleWatch closes the forward (closeAll) once no byte moved either way for
// ForwardIdleTimeout, and returns then or when done is closed.
func (s *Server) idleWatch(last *atomic.Int64, done <-chan struct{}, closeAll func(string)) {
	timeout := s.cfg.ForwardIdleTimeout
	if timeout < 0 {
		return
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case <-done:
			return
		case <-timer.C:
			idle := time.Since(time.Unix(0, last.Load()))
			if idle >= timeout {
				closeAll("idle for " + timeout.String())
				return
			}
			timer.Reset(timeout - idle)
		}
	}
}

// activityWriter counts what it writes and notes when.
type activityWriter struct {
	w    io.Writer
	n    *atomic.Int64
	last *atomic.Int64
}

func (a activityWriter) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	a.n.Add(int64(n))
	a.last.Store(time.Now().UnixNano())
	return n, err
}
