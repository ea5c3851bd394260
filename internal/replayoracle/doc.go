// Package replayoracle holds only tests: it checks the replay sanitizer
// against two terminals used as oracles, which must answer nothing to any
// sanitized replay or resume: the emulator github.com/charmbracelet/x/vt
// (fuzzed in-process) and the page's own xterm.js (its headless build under
// node, xterm_oracle.mjs, with the version web/package.json pins). It checks
// the screen replay too (package screen's snapshots): xterm.js answers
// nothing to the snapshot of any output, queries in every C0 and C1 form
// included, and shows what it shows after the output itself. It lives
// apart so that the sanitizer's package keeps depending on the standard
// library only.
package replayoracle
