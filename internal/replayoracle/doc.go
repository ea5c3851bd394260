// Package replayoracle holds only tests: it checks the replay sanitizer of
// package sessions against a terminal emulator (github.com/charmbracelet/x/vt)
// used as an oracle, which must produce no answer for any sanitized replay.
// It lives apart so that sessions keeps depending on the standard library
// only.
package replayoracle
