package docker

import (
	"context"

	"github.com/termgate/termgate/backend/procmark"
)

// killGrouped ends the processes marked with marker in the container,
// sharing one kill exec with concurrent Kill calls for the same container
// (procmark.Grouper: N sessions ending at once cost about two execs). It
// returns what the exec ended for this marker.
func (b *Backend) killGrouped(ctx context.Context, containerID, marker string) ([]procmark.Ended, error) {
	return b.kills.Kill(ctx, containerID, marker)
}

// runKill is the Grouper's RunFunc: one kill exec for markers.
func (b *Backend) runKill(ctx context.Context, containerID string, markers []string) ([]procmark.Ended, error) {
	return b.killMarked(ctx, containerID, markers...)
}
