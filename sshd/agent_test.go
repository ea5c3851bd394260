package sshd

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/agent"

	"github.com/termgate/termgate/backend/local"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// TestAgentRefusals: ssh -A on a gateway with --agent-forwarding=false,
// and with a no-agent-forwarding key, is refused through the one decision
// with its reason on stderr; the command runs all the same, without
// a socket of termgate's. (TestAgentForwardingDocker has the agent working.)
func TestAgentRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		sw   keys.Switches
		opts string // the admin key's options
		want string
	}{
		{"switch off", keys.Switches{NoAgentForwarding: true}, "", "agent forwarding is turned off on this gateway (--agent-forwarding=false)"},
		{"no-agent-forwarding", keys.Switches{}, "no-agent-forwarding ", "agent forwarding is not allowed for this key on web1 (no-agent-forwarding or restrict)"},
		{"restrict", keys.Switches{}, "restrict,pty ", "agent forwarding is not allowed for this key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b *local.Backend
			f := newFixtureReg(t, func(c *Config) {
				c.Remote = remote.Partial(b)
				c.Switches = tc.sw
			}, func(rc *sessions.Config) { b = rc.Backend.(*local.Backend) })
			f.setKeys(t, map[string]string{"admin": tc.opts})
			c := f.dial(t, "admin", "web1")
			s, err := c.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			if err := agent.RequestAgentForwarding(s); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			s.Stdout, s.Stderr = &out, &errOut
			if err := s.Run(`echo "sock=$SSH_AUTH_SOCK."`); err != nil {
				t.Fatalf("the command: %v; stderr %q", err, errOut.String())
			}
			if strings.Contains(out.String(), ".termgate-agent") || !strings.HasPrefix(out.String(), "sock=") || !strings.Contains(errOut.String(), "termgate: agent forwarding refused: "+tc.want) {
				t.Fatalf("stdout %q, stderr %q; want no socket and the refusal %q", out.String(), errOut.String(), tc.want)
			}
		})
	}
}
