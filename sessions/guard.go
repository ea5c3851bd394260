package sessions

import (
	"fmt"
	"runtime/debug"
)

// The goroutines that talk to an instance (starting or adopting its shell,
// reading its output) run code that parses what the instance sends: a
// holder's frames, an engine's stream. The instance is untrusted, so a
// panic there (a bug that input reaches) is that instance's failure: it is
// recovered and logged with the instance, and only its session fails.

// recoverFill turns a panic while fill gets a slot's shell into the slot's
// error (the attach, or the start-up adoption, reports it). Deferred by
// fill, after the deferred close of sl.ready.
func (r *Registry) recoverFill(sl *slot, inst Instance) {
	p := recover()
	if p == nil {
		return
	}
	r.cfg.Logger.Error("panic while starting or adopting a session; taken for the instance's holder failing",
		"instance", inst.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	sl.sess, sl.err = nil, fmt.Errorf("connect to the session in %s: internal error (the gateway log has the details)", inst.Name)
	r.forget(sl)
}

// recoverPump ends a session whose output pump panicked as if the
// connection to the instance broke (a held shell is left to its holder).
// Deferred by pump, which has not sent to pumpDone when it panics.
func (s *Session) recoverPump() {
	p := recover()
	if p == nil {
		return
	}
	s.log.Error("panic reading the shell's output; the session ends as if its connection broke",
		"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	cause := ErrBackendLost
	if s.held != nil {
		cause = ErrHolderLost
	}
	s.pumpDone <- cause
}
