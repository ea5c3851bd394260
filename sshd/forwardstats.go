package sshd

import "sync/atomic"

// forwardStats counts forwarded connections for the metrics (read at
// scrape time; the relay adds once per forward, never per byte).
type forwardStats struct {
	opened, refused, failed atomic.Uint64
	toTarget, fromTarget    atomic.Uint64
}

// ForwardStats returns the forwarded-connection counters: channels relayed,
// refused by policy or a cap, failed to connect, and the bytes each way
// of the ended ones.
func (s *Server) ForwardStats() (opened, refused, failed, toTarget, fromTarget uint64) {
	f := &s.fwdStats
	return f.opened.Load(), f.refused.Load(), f.failed.Load(), f.toTarget.Load(), f.fromTarget.Load()
}
