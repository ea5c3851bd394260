package sshd

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/termgate/termgate/keys"
)

// instances prints what this key may attach to (ssh HOST instances; issue
// 22 item 5): every running instance its instances= patterns allow, with
// the state of its session. Read-only keys may run it, as list.
func (s *Server) instances(sess *session, id keys.Identity) int {
	ctx, cancel := context.WithTimeout(sess.ctx, s.cfg.CommandTimeout)
	defer cancel()
	list, err := s.cfg.Registry.Instances(ctx, id.May)
	if err != nil {
		sess.log.Warn("list instances", "err", err)
		sess.errorf("could not list the instances: " + backendUnreachable)
		return 1
	}
	if len(list) == 0 {
		_, _ = io.WriteString(sess, "no instances this key may reach\n")
		return 0
	}
	tw := tabwriter.NewWriter(sess, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "INSTANCE\tSTATE\tSESSION")
	for _, in := range list {
		state, session := "no session", "-"
		if si := in.Session; si != nil {
			session = si.Session
			switch {
			case si.Clients > 0:
				state = fmt.Sprintf("%d attached", si.Clients)
			case si.IdleSince != nil:
				state = "idle since " + si.IdleSince.UTC().Format(time.RFC3339)
			default:
				state = "idle"
			}
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\n", in.Name, state, session)
	}
	_ = tw.Flush()
	return 0
}
