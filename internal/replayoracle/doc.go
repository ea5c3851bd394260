// Package replayoracle holds only tests: it checks the replay sanitizer
// against two terminals used as oracles, which must answer nothing to any
// sanitized replay or resume: the emulator github.com/charmbracelet/x/vt
// (fuzzed in-process) and the page's own xterm.js (its headless build under
// node, xterm_oracle.mjs, with the version web/package.json pins). It lives
// apart so that the sanitizer's package keeps depending on the standard
// library only.
package replayoracle
