package sshd

import (
	"context"
	"time"
)

// backendUnreachable is what an SSH user reads when the backend (the
// Docker engine, the Kubernetes API server) does not answer: the cause is
// no secret (GET /readyz says "backend unreachable" too), and it tells a
// user's mistake from the platform being down.
const backendUnreachable = "the gateway cannot reach its backend (the container engine or cluster API); " +
	"shells already attached keep running: try again in a minute, and tell the gateway's operator if it lasts " +
	"(its /readyz says backend unreachable)"

// readyWithin bounds the readiness check behind an unexpected error.
const readyWithin = 5 * time.Second

// backendDown says whether the backend fails its readiness check now. It
// is asked only after an unexpected error, to name the cause.
func (s *Server) backendDown(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, readyWithin)
	defer cancel()
	return s.cfg.Registry.Ready(ctx) != nil // no answer in time is down too
}
