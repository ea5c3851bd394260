package sshd

import (
	"time"
)

// A piped attach (ssh web1@HOST < file: no terminal) ends at its input's
// EOF, as docker exec -i does; the shell keeps running (a disconnect
// never ends a session). The output the input caused is still on its way
// then: the client is detached once the output has been quiet for
// eofQuiet, or after eofSettleMax however busy the shell is.
const (
	eofQuiet     = 300 * time.Millisecond
	eofSettleMax = 5 * time.Second
	eofTick      = 50 * time.Millisecond
)

// inputEnded is the audit cause of such a detach.
const inputEnded = "the client's input ended"

// detachAtEOF waits for eof, then for the output to settle, and detaches
// the client; stop ends it early (the relay ends).
func (r *relay) detachAtEOF(eof, stop <-chan struct{}) {
	select {
	case <-eof:
	case <-stop:
		return
	}
	deadline := time.Now().Add(eofSettleMax)
	t := time.NewTicker(eofTick)
	defer t.Stop()
	for time.Since(time.Unix(0, r.lastOut.Load())) < eofQuiet && time.Now().Before(deadline) {
		select {
		case <-t.C:
		case <-stop:
			return
		}
	}
	r.sess.log.Debug("detached at the end of the input", "instance", r.name)
	r.eofDetached.Store(true)
	r.current().Detach()
}
