package exechost

import (
	"context"
	"fmt"

	"github.com/termgate/termgate/internal/names"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// Agent serves the agent socket of session id (sessions.AgentSocket) in
// the instance through the holder (termgate-holder agent), run like every
// tool as the exec's user; with a login (the session's or the command's)
// the tool becomes that user first (agent --login), so that the socket
// and its private directory are the shell's user's, as the contract has
// them. The stream carries internal/agentwire frames; it ends (and the
// socket goes) with ctx or Close.
func (h *Host) Agent(ctx context.Context, inst sessions.Instance, id, login string) (remote.Conn, error) {
	if !names.ValidSessionID(id) {
		return nil, fmt.Errorf("agent forwarding: invalid session id %q", id)
	}
	args := []string{"agent"}
	if login != "" {
		if !names.ValidLogin(login) {
			return nil, fmt.Errorf("agent forwarding: invalid login %q", login)
		}
		args = append(args, "--login", login)
	}
	s, err := h.runTool(ctx, inst, append(args, sessions.AgentSocket(id))...)
	if err != nil {
		return nil, fmt.Errorf("agent forwarding: %w", err)
	}
	return s, nil
}

var _ remote.Agent = (*Host)(nil)
