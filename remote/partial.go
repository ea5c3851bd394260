package remote

import (
	"context"

	"github.com/termgate/termgate/sessions"
)

// Partial is the Runner of a backend b that offers some of Run, SFTP and
// Dial (each as Runner declares it): what it lacks is ErrUnsupported. It
// is nil when b offers none, and b itself when it offers all.
func Partial(b any) Runner {
	if r, ok := b.(Runner); ok {
		return r
	}
	p := partial{}
	p.run, _ = b.(interface {
		Run(context.Context, sessions.Instance, Command) (Process, error)
	})
	p.sftp, _ = b.(interface {
		SFTP(context.Context, sessions.Instance, SFTPOptions) (Conn, error)
	})
	p.dial, _ = b.(interface {
		Dial(context.Context, sessions.Instance, string, int) (Conn, error)
	})
	if p.run == nil && p.sftp == nil && p.dial == nil {
		return nil
	}
	return p
}

type partial struct {
	run interface {
		Run(context.Context, sessions.Instance, Command) (Process, error)
	}
	sftp interface {
		SFTP(context.Context, sessions.Instance, SFTPOptions) (Conn, error)
	}
	dial interface {
		Dial(context.Context, sessions.Instance, string, int) (Conn, error)
	}
}

func (p partial) Run(ctx context.Context, inst sessions.Instance, cmd Command) (Process, error) {
	if p.run == nil {
		return nil, ErrUnsupported
	}
	return p.run.Run(ctx, inst, cmd)
}

func (p partial) SFTP(ctx context.Context, inst sessions.Instance, opts SFTPOptions) (Conn, error) {
	if p.sftp == nil {
		return nil, ErrUnsupported
	}
	return p.sftp.SFTP(ctx, inst, opts)
}

func (p partial) Dial(ctx context.Context, inst sessions.Instance, host string, port int) (Conn, error) {
	if p.dial == nil {
		return nil, ErrUnsupported
	}
	return p.dial.Dial(ctx, inst, host, port)
}
