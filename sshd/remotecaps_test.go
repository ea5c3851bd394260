package sshd

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/backend/local"
	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// lingeringRemote is a Runner whose processes take a while to Close after
// they exited, as the container backends' do (exechost gathers the sweep
// of what a command left for up to a second).
type lingeringRemote struct {
	remote.Runner
	linger time.Duration
}

func (l lingeringRemote) Run(ctx context.Context, inst sessions.Instance, cmd remote.Command) (remote.Process, error) {
	p, err := l.Runner.Run(ctx, inst, cmd)
	if err != nil {
		return nil, err
	}
	return lingeringProcess{p, l.linger}, nil
}

type lingeringProcess struct {
	remote.Process
	linger time.Duration
}

func (p lingeringProcess) Close() error {
	err := p.Process.Close()
	time.Sleep(p.linger)
	return err
}

// newCapsFixture runs commands on its local backend, each Close lingering,
// under the caps of at most one remote operation per key and two per
// instance, two sessions per key and two channels per connection.
func newCapsFixture(t *testing.T, al *auditLog) *fixture {
	t.Helper()
	var b *local.Backend
	return newFixtureReg(t, func(c *Config) {
		c.Remote = lingeringRemote{remote.Partial(b), 1500 * time.Millisecond}
		c.Audit = audit.New(&al.buf)
		c.MaxRemotePerKey, c.MaxRemotePerInstance = 1, 2
		c.MaxSessionsPerKey, c.MaxChannelsPerConn = 2, 2
	}, func(rc *sessions.Config) { b = rc.Backend.(*local.Backend) })
}

// TestRemoteCapsRefuseAndRelease: a key at its cap of concurrent commands
// is refused with a message saying so (and an audit record); once the
// command ends the next one runs, and commands that already exited hold no
// slot while the backend still sweeps after them, so back-to-back
// commands never meet the cap. The per-instance cap counts every key.
func TestRemoteCapsRefuseAndRelease(t *testing.T) {
	al := &auditLog{}
	f := newCapsFixture(t, al)

	// Back to back: each Close lingers 1.5 s, the cap is one.
	start := time.Now()
	for i := range 3 {
		if r := f.run(t, "admin", "web1", "echo ok"); r.code != 0 || r.stdout != "ok\n" {
			t.Fatalf("command %d after one that exited: status %d, stdout %q, stderr %q", i, r.code, r.stdout, r.stderr)
		}
	}
	t.Logf("three back-to-back commands, each Close lingering 1.5 s: %v", time.Since(start).Round(time.Millisecond))

	// The same on one connection (ControlMaster): its channels end as
	// their commands do.
	mux := f.dial(t, "admin", "web1")
	for i := range 3 {
		r := termtest.Run(t, mux, "echo ok", waitFor)
		if r.Code != 0 || r.Stdout != "ok\n" {
			t.Fatalf("channel %d on one connection: status %d, stdout %q, stderr %q", i, r.Code, r.Stdout, r.Stderr)
		}
	}
	_ = mux.Close()

	// A running command holds the key's one slot.
	c := startSleeper(t, f, "admin")
	r := f.run(t, "admin", "web1", "echo second")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "this key already runs 1 commands, transfers and forwarded connections; end one and try again") {
		t.Errorf("over the key's cap: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	al.wait(t, audit.Command, map[string]any{"instance": "web1", "result": "denied", "reason": "over the cap"})

	// Another key has a slot of its own, and fills web1's two.
	c2 := startSleeper(t, f, "web")
	r = f.run(t, "nopty", "web1", "echo third")
	if r.code != 1 || !strings.Contains(r.stderr, `instance "web1" already runs 2 commands, transfers and forwarded connections through the gateway; try again later`) {
		t.Errorf("over the instance's cap: status %d, stderr %q", r.code, r.stderr)
	}
	if r := f.run(t, "nopty", "web2", "echo elsewhere"); r.code != 0 || r.stdout != "elsewhere\n" {
		t.Errorf("another instance: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// The client going away ends the command and frees its slot.
	_ = c.Close()
	deadline := time.Now().Add(waitFor)
	for {
		r = f.run(t, "admin", "web1", "echo again")
		if r.code == 0 && r.stdout == "again\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the first command's client left: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = c2.Close()
}

// startSleeper runs a long command in web1 with key and waits until it
// runs; closing the client returned ends it.
func startSleeper(t *testing.T, f *fixture, key string) *gossh.Client {
	t.Helper()
	c := f.dial(t, key, "web1")
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out := newStream()
	s.Stdout = out
	if err := s.Start("echo started; sleep 30"); err != nil {
		t.Fatal(err)
	}
	if m, _ := out.waitFor(regexp.MustCompile("started"), 0); m == nil {
		t.Fatalf("%s's command: output %q", key, out.String())
	}
	return c
}
