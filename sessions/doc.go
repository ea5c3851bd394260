// Package sessions is termgate's registry of persistent terminal sessions.
// It declares what it needs from a backend (Backend, Process, and
// HeldProcess for durable sessions; backend.go, held.go) and depends on
// the standard library and a clock only.
//
// A Registry holds an instance's default Session and its named ones, each
// at a slot keyed by (instance ID, session name; "" the default: slots.go),
// and creates or joins one atomically (registry.go), so an SSH client and
// a browser that attach to the same session at once share one shell. The
// methods acting on one session take its address, INSTANCE or
// INSTANCE+NAME (addr.go); instance events (a stop, a rename, a pause)
// apply to all of the instance's sessions; Config.MaxPerInstance and
// Config.MaxNamedPerWho cap new slots, under Registry.mu. A held session
// is adopted by its name (Adopter.Adopt). A Session owns one shell
// started through the Backend, the replay ring of its output (ring.go,
// slab.go), its Replayer (raw: replay.go and the sanitizer, sanitize*.go;
// screen: package screen) and the Clients attached to it (client.go). Its
// state only moves forward: running, closing, closed. A reset ends the
// session with a *ResetError and the registry moves its clients into the
// fresh one (move.go); idle reaping, an instance that stops, a revoked
// credential (recheck.go) and shutdown end it or its clients with a cause
// the listeners print. A paused instance keeps its session: its clients get
// an in-band *Notice and attaches are refused until the unpause
// (paused.go). A client that falls too far behind gets an in-band
// *Skipped, then the current screen (skip.go). A person (a client's Who)
// back in a session they left gets, after the replay, an in-band *Away:
// how long they were gone, how much output went by and, where the shell
// marks its prompts with OSC 133, the commands that finished meanwhile
// (away.go; osc133.go, cmdline.go). Registry.Since: the output since then.
//
// Goroutines, each owned and waited for by Close/Wait or Shutdown:
//
//   - per Session, run (waits for the end, then kills the shell's
//     processes and tears down in order) and pump (reads the shell's output
//     into the ring, the observer and every client's bounded queue; it
//     never blocks on a client: one whose queue overflows is brought
//     forward to the current screen with an in-band *Skipped when the
//     Replayer is a Redrawer (--replay screen, skip.go), and otherwise
//     dropped with ErrSlowClient and may reattach);
//   - per Session while they have work only, the resizer (applies window
//     sizes in order, to the replayer and the backend, paced and coalesced:
//     resizer.go, resizepace.go) and the inputter (writes queued input and
//     the emulator's answers, input.go), so an idle session has two;
//   - per Registry, the backend's Watch (instance stops and renames) and,
//     during Shutdown, one that waits for the sessions;
//   - a Client's AfterClose callbacks, each in its own goroutine once the
//     client is closed, waited for by whoever registered them.
//
// The instance is untrusted: a panic while starting or adopting its shell
// or reading its output is recovered as that instance's failure
// (guard.go), a reset its holder announces is followed only with clients
// to move, no faster than client resets, and only into the announced
// session (move.go), and an attach whose replay would overflow the
// client's queue is refused rather than registered.
//
// The shell's window size follows a SizePolicy over the read-write
// clients' sizes, or a pin (sizepolicy.go, sizepin.go); clients whose idea
// of it is wrong get a *Resized in band. A keep postpones idle reaping
// (keep.go). Presence: Registry.Who, *Presence events (NotifyJoins), an
// observer's raised hand (*HandRaised for the writers) and a writer's
// grant of write access (*Granted), which a reset ends. In-band events a
// flood could multiply are bounded per client.
//
// Info never takes Session.mu: the session publishes a snapshot of it at
// each change (infosnap.go), so /metrics and /api/sessions never wait on a
// busy session. The main log gets one info line per attach, detach, reset,
// reap and session end, the same from both listeners (logline.go, ids as
// ShortID); the rest is debug.
//
// Replay and subscription happen under Session.mu: nothing is lost or
// doubled between them. The away book and presence (away.go, presence.go)
// have locks of their own, taken before Session.mu is let go: they see its
// events in order, and the OSC 133 marks and the presence notices are
// handled under them alone. Delivery never writes to the network: a
// listener takes a client's chunks and in-band Events itself (Client.Ready,
// Take; event.go: an EventHandler method per kind); Take's error is the end.
//
// Lock order: Registry.mu, Session.mu, the away book's or presence's (never
// both), Client.mu; the Replayer's after Session.mu. No lock is held across
// backend or network I/O.
package sessions
