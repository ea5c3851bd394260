package websock

import (
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/sessions"
)

// behindGrace is how long a client that fell behind still has to take
// the output frame in flight, after which the error event and the close
// frame follow (issue 20 D6: one that stopped reading was cut in the
// middle of a frame when its write timed out, so it only ever saw its
// socket end, 1006, minutes later, and the log called it an ordinary
// detach). A client that reads again within it learns why it was dropped;
// one that never does is closed when it ends, within seconds.
const behindGrace = 5 * time.Second

// behindWatch (--replay raw only: with --replay screen a client that
// does not read is brought forward instead, stall.go) turns an output
// write that the client does not take within WriteTimeout into a drop for
// falling behind, without cutting the frame:
// the write keeps behindGrace more (its deadline is WriteTimeout +
// behindGrace), and the connection ends after it with the error event and
// close 1013. One per connection, used by the writer only; run waits for
// its callback (wg).
type behindWatch struct {
	c  *conn
	wg sync.WaitGroup
}

// start arms the watch for one write; the returned stop disarms it.
func (b *behindWatch) start(after time.Duration) (stop func()) {
	b.wg.Add(1)
	t := time.AfterFunc(after, func() {
		defer b.wg.Done()
		b.c.fellBehind()
	})
	return func() {
		if t.Stop() {
			b.wg.Done()
		}
	}
}

// fellBehind drops a client that took no output for WriteTimeout: the
// session lets it go (the shell and the others never wait for it), and
// the writer tells it once the frame in flight is through.
func (c *conn) fellBehind() {
	c.mu.Lock()
	first := c.cause == nil
	if first {
		c.cause = sessions.ErrSlowClient
	}
	c.mu.Unlock()
	if !first { // the connection ends for another reason (or already did)
		return
	}
	c.log.Info("websocket client fell too far behind the output: it took none for "+c.s.cfg.WriteTimeout.String()+"; disconnecting", "grace", behindGrace.String())
	c.stopClient()
	c.endBehind()
}

// endBehind ends a connection that fell behind: the frames still queued
// are skipped (hurry), the one in flight gets behindGrace, then the error
// event and a close (1013, try again later) go out.
func (c *conn) endBehind() {
	c.hurry.Store(true)
	c.end(errorFrame(sessions.ErrSlowClient.Error()), websocket.CloseTryAgainLater)
	_ = c.ws.NetConn().SetWriteDeadline(time.Now().Add(behindGrace))
}
