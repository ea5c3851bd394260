package sshd

import "runtime/debug"

// recoverer turns a panic in a handler into a log entry, a short message
// for the user and exit status 1; the server keeps running.
func recoverer(next handler) handler {
	return func(sess *session) {
		defer func() {
			if p := recover(); p != nil {
				sess.log.Error("panic in session handler", "panic", p, "stack", string(debug.Stack()))
				sess.errorf("termgate: internal error; the gateway log has the details")
				sess.end(1)
			}
		}()
		next(sess)
	}
}
