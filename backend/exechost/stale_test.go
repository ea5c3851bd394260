package exechost

import (
	"errors"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

// A start that found a live holder which does not answer on its socket (a
// deleted socket) is not "not held": the registry would start again into
// the same lock for ever (issue 20, D3).
func TestStaleHolderErrorIsNotNotHeld(t *testing.T) {
	err := staleHolderErr(sessions.Instance{Name: "web1", ID: "id1"}, "/tmp/.termgate/holder.sock")
	if errors.Is(err, sessions.ErrNotHeld) || !strings.Contains(err.Error(), `"web1"`) || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("%v; want an error naming the instance and the reason, not ErrNotHeld", err)
	}
}
