// Package sessions is termgate's registry of persistent terminal sessions.
//
// A Session owns one shell started in an instance through a Backend, the
// replay buffer of its output and the clients attached to it. Both listeners
// (sshd and websock) go through one Registry, so an SSH client and a browser
// that attach to the same instance share one shell.
//
// Output flows pump → ring → per-client bounded queues: the pump goroutine
// never blocks on a client, and a client whose queue overflows is dropped
// with ErrSlowClient (it may reattach and get the replay).
//
// Lock order: Registry.mu, then Session.mu, then Client.mu. No lock is held
// across backend or network I/O.
package sessions
