package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/internal/termtest"
)

// Scenario 6: when the container stops (or is removed), its session ends:
// the attached clients are told and disconnected, and it leaves the
// session lists.
func TestInstanceStops(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		suffix string
		docker []string // the command, the container name appended
	}{
		{"docker stop", "web-stop", []string{"stop", "-t", "1"}},
		{"docker rm -f", "web-rm", []string{"rm", "-f"}},
	}
	var suffixes []string
	for _, c := range cases {
		suffixes = append(suffixes, c.suffix)
	}
	g := newGateway(t, options{containers: suffixes})
	for _, c := range cases {
		name := g.name(c.suffix)
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := g.ws(t, tokAdmin, name)
			s := g.attach(t, keyAdmin, name, 80, 24)
			g.waitClients(t, name, 2)
			s.roundTrip()
			if r := g.ssh(t, keyAdmin, "me", "list"); !strings.Contains(r.stdout, name) {
				t.Fatalf("list before the stop: %q, want %s", r.stdout, name)
			}

			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			if _, err := docker(ctx, append(c.docker, name)...); err != nil {
				t.Fatal(err)
			}

			ev := w.nextEvent()
			if (ev.Type != "error" && ev.Type != "exit") || !strings.Contains(ev.Message, "stopped") {
				t.Errorf("the WebSocket client got %s, want an error event saying the instance stopped", ev.raw)
			}
			if code := w.waitClosed(); code != websocket.CloseNormalClosure && code != websocket.CloseGoingAway {
				t.Errorf("the WebSocket closed with %d (%v), want a close frame", code, w.readErr)
			}

			// The channel has closed: everything the gateway sent is in.
			code := termtest.ExitStatus(t, s.wait())
			if notice := regexp.MustCompile(`\[termgate\][^\r\n]*stopped`); !notice.MatchString(s.errOut.String() + s.out.String()) {
				t.Errorf("the SSH client got no notice that the instance stopped; stderr %q, stdout %q", s.errOut, s.out.String()[s.seen:])
			}
			if code == 0 {
				t.Errorf("the SSH session ended with status 0, want non-zero")
			}

			eventually(t, "the stopped instance to leave the session list", func() bool {
				_, ok := g.session(t, name)
				return !ok
			})
			if r := g.ssh(t, keyAdmin, "me", "list"); r.code != 0 || strings.Contains(r.stdout, name) {
				t.Errorf("list after the stop: status %d, %q; want 0 without %s", r.code, r.stdout, name)
			}
			if r := g.ssh(t, keyAdmin, name, ""); r.code != 1 || !strings.Contains(r.stderr, `instance "`+name+`" not found or not running`) {
				t.Errorf("attach to the stopped instance: status %d, stderr %q; want 1 and the not-found message", r.code, r.stderr)
			}
		})
	}
}
