// Package docker is termgate's sessions.Backend over the Docker Engine API:
// instances are running containers and a session's shell is a TTY
// `docker exec`. Shells, kills, sweeps and durable sessions are
// backend/exechost's; this package gives it the engine's execs (exec.go)
// and archive uploads (upload.go), and keeps what only the engine has:
//
//   - Below API 1.42 the SDK drops ExecOptions.ConsoleSize, and resizing an
//     exec that has not started blocks for 10 s, so a TTY exec is resized
//     right after the attach (which starts it).
//   - The daemon watches an exec's input for a detach sequence (Ctrl-P
//     Ctrl-Q by default) and holds back a lone Ctrl-P until the next key;
//     a long, unlikely sequence replaces it (detachKeys).
//   - Instance names are container names. Lookup refuses a container whose
//     name differs from the one asked for (the Engine also resolves ID
//     prefixes), so per-key name globs cannot be bypassed with an ID.
//   - The archive API cannot see into a tmpfs mount, and a read-only root
//     filesystem refuses every upload: HolderDirs leaves those out.
//
// Goroutines: Watch runs on its caller's; the SDK's event reader is
// waited for when it returns. Locks: running.mu guards the cache of
// containers known to run (running.go), with no I/O under it.
package docker
