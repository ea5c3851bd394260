package sshd

import (
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// keepaliveRequest is OpenSSH's keepalive: clients answer it (usually with
// a failure, which counts as an answer).
const keepaliveRequest = "keepalive@openssh.com"

// keepalive sends a keepalive request every KeepaliveInterval, at most one
// at a time, and closes the connection when KeepaliveMax intervals pass
// without an answer. It returns when the connection closes. This replaces
// an idle timeout, which would drop silent but healthy sessions.
func (s *Server) keepalive(cs *connState, sc *gossh.ServerConn) {
	if s.cfg.KeepaliveInterval < 0 {
		return
	}
	tick := time.NewTicker(s.cfg.KeepaliveInterval)
	defer tick.Stop()
	answered := make(chan struct{}, 1) // one request in flight at most
	inFlight, missed := false, 0
	for {
		select {
		case <-cs.ctx.Done():
			return
		case <-answered:
			inFlight, missed = false, 0
		case <-tick.C:
			if inFlight {
				missed++
				if missed >= s.cfg.KeepaliveMax {
					cs.log.Info("client stopped answering keepalives; closing the connection",
						"interval", s.cfg.KeepaliveInterval, "missed", missed)
					_ = cs.nc.Close()
					return
				}
				continue
			}
			inFlight = true
			s.track.Go(func() {
				// Returns on the answer, or with an error once the connection
				// is closed; either way the send below never blocks.
				if _, _, err := sc.SendRequest(keepaliveRequest, true, nil); err == nil {
					answered <- struct{}{}
				}
			})
		}
	}
}
