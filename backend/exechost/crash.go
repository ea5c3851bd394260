package exechost

import (
	"fmt"
	"strings"
)

// A holder that cannot start may say why with the Go runtime's crash
// output: a container at its pid limit (docker run --pids-limit) lets the
// launch script run but not the holder's threads ("runtime: failed to
// create new OS thread ... fatal error: newosproc", then a stack of
// several KB). That stack is for a developer, not for the gateway's
// WARN line (issue 20, D7): the error says the reason in one line, and
// startHeldIn logs the whole output at debug level.

// goCrash reports whether out is the Go runtime's crash output, and its
// one-line reason.
func goCrash(out string) (reason string, ok bool) {
	i := strings.Index(out, "fatal error: ")
	if i < 0 {
		i = strings.Index(out, "panic: ")
	}
	if i < 0 || !strings.Contains(out, "goroutine ") && !strings.Contains(out, "runtime stack:") {
		return "", false
	}
	line, _, _ := strings.Cut(out[i:], "\n")
	switch {
	case strings.Contains(out, "failed to create new OS thread"), strings.Contains(line, "newosproc"),
		strings.Contains(out, "resource temporarily unavailable"):
		return "the instance is at its process limit (thread or process creation failed); free some or raise its pids limit", true
	case strings.Contains(line, "out of memory"):
		return "the instance is out of memory", true
	}
	line = strings.TrimSpace(line)
	if len(line) > 200 {
		line = line[:200] + "..."
	}
	return "it crashed: " + line, true
}

// serveFailed is the error of a start exec that did not say "holder" or
// "already held": the reason in one line for a holder that crashed, else
// what it printed (at most 512 bytes).
func serveFailed(r execResult) error {
	msg := strings.TrimSpace(r.Stderr + " " + r.Stdout)
	if reason, ok := goCrash(msg); ok {
		return fmt.Errorf("the holder could not start (status %d): %s", r.Code, reason)
	}
	if len(msg) > 512 {
		msg = msg[:512] + "..."
	}
	return fmt.Errorf("the holder did not start (status %d): %s", r.Code, msg)
}
