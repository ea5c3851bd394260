// Package local is the termgate backend whose instances are PTY shells on
// the gateway's own host (github.com/creack/pty). It exists for development,
// demos and fast tests of everything above the backend: every valid name is
// an instance unless Config.Instances lists the allowed ones.
//
// Local shells are children of the gateway: when it dies, the kernel hangs up
// their terminals, so there is nothing for Sweep to find.
package local
