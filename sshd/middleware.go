package sshd

// handler serves one session channel once it asked for a shell or a
// command.
type handler func(sess *session)

// middleware wraps a handler, in charmbracelet/wish's shape: each one does
// one job (recover, logging, auth) and calls next.
type middleware func(next handler) handler

// chain wraps h in mws; mws[0] is the outermost, it runs first.
func chain(h handler, mws ...middleware) handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}
