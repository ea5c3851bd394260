package sshd

import (
	"regexp"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// Window changes never wait in the channel's request loop (gliderlabs
// queued them in a channel of one and blocked the loop on a full one):
// changes sent before the shell request, or many in a row, must not wedge
// the session.
func TestWindowChangesNeverBlock(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t, "admin", "web1")

	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out := newStream()
	s.Stdout = out
	stdin, err := s.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 { // before the shell request: nobody drains yet
		if err := s.WindowChange(30+i, 90); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, client: c, sess: s, stdin: stdin, out: out, errOut: newStream(), done: make(chan error, 1)}
	go func() { tm.done <- s.Wait() }()
	for i := range 200 {
		if err := s.WindowChange(40+i%10, 100); err != nil {
			t.Fatal(err)
		}
	}
	tm.expectSize("49 100", regexp.MustCompile(`^4\d 100$`)) // the last change wins
	tm.send("exit 0")
	if code := tm.wait(); code != 0 {
		t.Fatalf("status %d", code)
	}
}
