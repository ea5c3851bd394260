package termtest

import (
	"bytes"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// ClientConfig logs in as user with signer and trusts only hostKey.
func ClientConfig(user string, signer gossh.Signer, hostKey gossh.PublicKey, timeout time.Duration) *gossh.ClientConfig {
	return &gossh.ClientConfig{
		User:            user,
		Auth:            []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.FixedHostKey(hostKey),
		Timeout:         timeout,
	}
}

// Result is what a finished SSH command left.
type Result struct {
	Stdout, Stderr string
	Code           int // the exit status
}

// Run runs cmd (no PTY) in a new session on c and waits, at most timeout,
// for its exit status; past it, it closes c and fails the test.
func Run(t testing.TB, c *gossh.Client, cmd string, timeout time.Duration) Result {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	go func() { done <- s.Run(cmd) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err = <-done:
	case <-timer.C:
		_ = c.Close()
		<-done
		t.Fatalf("ssh %s@ %q did not finish within %s; stdout %q, stderr %q", c.User(), cmd, timeout, stdout.String(), stderr.String())
	}
	return Result{stdout.String(), stderr.String(), ExitStatus(t, err)}
}
