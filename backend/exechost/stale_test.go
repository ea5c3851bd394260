package exechost

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// A start that found a live holder which does not answer on its socket (a
// deleted socket) is not "not held": the registry would start again into
// the same lock for ever (issue 20, D3).
func TestStartIntoAHolderThatDoesNotAnswerIsNotNotHeld(t *testing.T) {
	inst := sessions.Instance{Name: "web1", ID: "id1"}
	stale := fmt.Errorf("instance %q: %w (stale socket /tmp/.termgate/holder.sock)", inst.Name, sessions.ErrNotHeld)
	err := heldStartErr(inst, serveHeld, "/tmp/.termgate/holder.sock", stale)
	if errors.Is(err, sessions.ErrNotHeld) || !strings.Contains(err.Error(), `"web1"`) || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("already held, no answer: %v; want an error naming the instance and the reason, not ErrNotHeld", err)
	}
	// A holder this start began itself keeps its cause.
	if err := heldStartErr(inst, serveStarted, "/tmp/.termgate/holder.sock", stale); !errors.Is(err, sessions.ErrNotHeld) {
		t.Errorf("started: %v, want the cause kept", err)
	}
}
