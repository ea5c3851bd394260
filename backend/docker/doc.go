// Package docker is termgate's sessions.Backend over the Docker Engine API:
// instances are running containers and a session's shell is a TTY
// `docker exec`.
//
// The Engine API shapes the design more than anything else:
//
//   - An exec cannot be killed, signalled or re-attached through the API, and
//     closing its stream does not end it. Every shell therefore carries
//     TERMGATE_SESSION=<id> in its environment, and Kill runs a second,
//     non-TTY exec (procmark.KillScript, shared with backend/kubernetes) that SIGKILLs the marked processes and every
//     process in their sessions (the TTY exec is a session leader; job
//     control puts background jobs in other process groups of that session).
//     Sweep runs the same script for any marker, to end the shells an earlier
//     run of the gateway left behind.
//   - Below API 1.42 the SDK drops ExecOptions.ConsoleSize, and resizing an
//     exec that has not started blocks for 10 s, so Start resizes right after
//     the attach (which starts the exec).
//   - The daemon watches an exec's input for a detach sequence (Ctrl-P
//     Ctrl-Q by default) and holds back a lone Ctrl-P until the next key.
//     Start sets a long, unlikely sequence instead (detachKeys).
//   - Instance names are container names. Lookup refuses a container whose
//     name differs from the one asked for (the Engine also resolves ID
//     prefixes), so per-key name globs cannot be bypassed with an ID.
package docker
