package docker

import (
	"errors"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

// The backend, not the registry, says how a shell ended (endcause.go): the
// process's Read ends with sessions.ErrInstanceGone when the container was
// stopped or killed under the shell, and with the exit status when the
// shell exited, or was killed by a signal, in a running container. Both an
// ordinary exec and a held session (its holder dies with the container).
func TestEndCauseFromTheEngine(t *testing.T) {
	needEngine(t)
	t.Parallel()
	gone := func(err error) bool { return errors.Is(err, sessions.ErrInstanceGone) }
	exited := func(code int) func(error) bool {
		return func(err error) bool {
			var e *sessions.ExitError
			return errors.As(err, &e) && e.Code == code
		}
	}
	for _, tc := range []struct {
		name    string
		durable bool
		input   string   // typed into the shell
		docker  []string // run against the container
		want    func(error) bool
		says    string
	}{
		{"exit 3", false, "exit 3\n", nil, exited(3), "an ExitError with status 3"},
		{"kill -9 of the shell", false, "kill -9 $$\n", nil, exited(137), "an ExitError with status 137"},
		{"docker stop", false, "", []string{"stop", "-t", "1"}, gone, "ErrInstanceGone"},
		{"docker kill", false, "", []string{"kill"}, gone, "ErrInstanceGone"},
		{"held: docker stop", true, "", []string{"stop", "-t", "1"}, gone, "ErrInstanceGone"},
		{"held: docker kill", true, "", []string{"kill"}, gone, "ErrInstanceGone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name, _ := runContainer(t, "--label", runLabel)
			var tm *term
			if tc.durable {
				b, _ := durableBackend(t, Config{})
				tm, _ = startHeld(t, b, lookup(t, b, name))
			} else {
				tm, _, _ = startShell(t, newBackend(t, Config{}), name, sessions.DefaultSize)
			}
			shellPID(t, tm) // the shell runs and reads its input
			if tc.input != "" {
				tm.write(t, tc.input)
			}
			if tc.docker != nil {
				dockerCLI(t, append(tc.docker, name)...)
			}
			if err := tm.waitEnd(t, 15*time.Second); !tc.want(err) {
				t.Fatalf("Read ended with %v, want %s", err, tc.says)
			}
		})
	}
}
