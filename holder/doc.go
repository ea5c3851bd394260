// Package holder is the in-instance session holder of durable sessions
// (--durable): a small static program (cmd/termgate-holder) that the
// gateway copies into an instance and starts with an exec. The holder, not
// the gateway, owns the shell's terminal, the replay ring with its byte
// offsets and the idle timer, so a session outlives the gateway, and any
// number of gateways can serve it at once. How the gateways install, start
// and adopt holders, and what that costs, is in docs/DURABLE.md; the
// promise that a holder is no way out of its instance, in SECURITY.md
// ("Instances are untrusted").
//
// proto.go and messages.go are the wire protocol: frames on a byte stream
// (an exec's stdin/stdout), versioned by a Hello each side sends first; a
// side that meets a version it does not speak says so and leaves the
// session alone. Frames over MaxPayload are refused. Client (client.go) is
// the gateway's end of it. Version 2: each holder has a key that only its
// deployment's gateways can compute, and both ends prove they have it with
// the hellos' nonces and the attach (proof.go) before anything else is
// taken; a gateway leaves a holder without the proof alone (ErrForeign),
// a holder refuses a gateway without it. The key reaches the holder on the
// start exec's stdin, never in its command line or environment
// (cmd/termgate-holder serve --key-stdin).
//
// Serve (serve.go) runs the daemon on a unix socket only (a 0700
// directory, a 0600 socket; no network port); its lock file (lock.go)
// decides which of two racing holders serves, and its owner puts a
// deleted socket back (relisten.go). Attach (attach.go) is the
// "termgate-holder attach" exec: it passes the exec's stdin and stdout to
// the holder over the socket (SCM_RIGHTS, passfd.go) and then only waits,
// or copies between them and the socket for a holder that takes no
// descriptors.
//
// Goroutines, all in Serve's WaitGroup: accept (one per listener; a
// relisten closes the old one), the socket watcher, one pump per shell (reads
// the terminal into the ring and every gateway's queue, and stops reading
// while a gateway has more than 1 MiB waiting, so bursts lose nothing), and
// per gateway connection a reader (conn.serve, which handles its frames)
// and a writer (conn.writer, which drains its queue); a gateway that takes
// nothing for 10 s is dropped and reattaches from its offset. Attach runs
// two copy goroutines only in the copying case. The daemon's reaper
// (reap.go: the holder is a child subreaper, and reaps the orphans it
// inherits) is Subreap's, which its stop waits for.
//
// Locks: holder.mu guards the session, the ring, the listener and the set of
// connections; conn.mu guards one connection's queue and is taken after
// holder.mu, only to queue a frame without blocking. Neither is held
// across terminal or socket I/O.
package holder
