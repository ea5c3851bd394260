package sshd

import "github.com/gliderlabs/ssh"

// middleware wraps a handler, in charmbracelet/wish's shape: each one does
// one job (recover, logging, auth) and calls next.
type middleware func(next ssh.Handler) ssh.Handler

// chain wraps h in mws; mws[0] is the outermost, it runs first.
func chain(h ssh.Handler, mws ...middleware) ssh.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}
