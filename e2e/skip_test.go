package e2e

import (
	"regexp"
	"syscall"
	"testing"
	"time"
)

// Contract, session semantics 8, with the OpenSSH client: an ssh that
// stops reading its socket (SIGSTOP) while 40 MB are printed (more than
// the gateway's 16 MiB client queue, the channel window and the socket
// buffers) stays attached with --replay screen; when it reads again it
// gets the redraw and a one-line [termgate] notice, and its shell is
// still there, also in a durable session. With --replay raw it is
// disconnected, as before.
func TestOpenSSHClientThatStopsReading(t *testing.T) {
	sshBin := needOpenSSH(t)
	for _, tc := range []struct {
		name, replay string
		durable      bool
		want         string // in ssh's output once it reads again
		stays        bool
	}{
		{"screen", "screen", false, `\[termgate\] fell behind the output: skipped \d+ MB to catch up`, true},
		// A held shell's output reaches the gateway's emulator too.
		{"durable", "screen", true, `\[termgate\] fell behind the output: skipped \d+ MB to catch up`, true},
		{"raw", "raw", false, `\[termgate\] client fell too far behind the output and was disconnected`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := options{containers: []string{"web-skip"}, args: []string{"--replay", tc.replay}}
			var g *gateway
			if tc.durable {
				g = durableGateway(t, o).gateway
			} else {
				g = newGateway(t, o)
			}
			name := g.name("web-skip")
			r := g.openssh(t, sshBin, t.TempDir(), "-tt", name+"@127.0.0.1")
			r.typeIn("echo PID=$$\n")
			pid := r.expect(`PID=(\d+)`)[1]
			if tc.durable {
				if s, ok := durableSession(t, g, name); !ok || s.Durable == nil || !*s.Durable {
					t.Fatalf("the session is not durable: %+v", s)
				}
			}
			r.typeIn("head -c 40000000 /dev/zero | tr '\\0' x; echo EN''D$((6*7))\n")
			r.expect(`xxxx`) // it runs
			if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			if tc.stays {
				eventually(t, "40 MB of output", func() bool {
					s, ok := g.session(t, name)
					return ok && s.BytesOut >= 40_000_000
				})
				g.waitClients(t, name, 1)
				t.Logf("40 MB printed %v after ssh stopped reading", time.Since(stopped).Round(time.Millisecond))
			} else {
				// Dropped: it reads again at once, within the gateway's
				// grace for taking the notice and the exit status (a
				// client stopped longer gets the connection closed).
				g.waitClients(t, name, 0)
				t.Logf("dropped %v after ssh stopped reading", time.Since(stopped).Round(time.Millisecond))
			}
			if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if !tc.stays { // the notice goes to stderr, then the exit status
				if code := r.wait(); code != 1 || !regexp.MustCompile(tc.want).MatchString(r.errOut.String()) {
					t.Fatalf("ssh dropped as too slow: status %d, stderr %q; want 1 and the notice", code, r.errOut)
				}
				return
			}
			r.expect(tc.want)
			r.typeIn("echo PID=$$\n")
			if again := r.expect(`PID=(\d+)`)[1]; again != pid {
				t.Fatalf("after the skip the shell is %s, want %s", again, pid)
			}
			if s := g.waitClients(t, name, 1); s.Clients != 1 {
				t.Fatalf("%d clients, want 1", s.Clients)
			}
		})
	}
}
