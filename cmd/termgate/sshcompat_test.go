package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// TestSSHCompatAlgorithmsFlag: a client that knows only a NIST key
// exchange finds no common algorithm with the gateway, unless
// --ssh-compat-algorithms (or TERMGATE_SSH_COMPAT_ALGORITHMS) is set.
func TestSSHCompatAlgorithmsFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole gateway")
	}
	if o, err := parseFlags(nil, env(map[string]string{"TERMGATE_SSH_COMPAT_ALGORITHMS": "true"})); err != nil || !o.sshCompat {
		t.Fatalf("TERMGATE_SSH_COMPAT_ALGORITHMS=true: %+v, %v", o, err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := gossh.NewSignerFromKey(priv) // in no authorized_keys: the handshake's end is what counts
	nist := func(addr string) error {
		c, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{User: "web1", Auth: []gossh.AuthMethod{gossh.PublicKeys(key)},
			HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second,
			Config: gossh.Config{KeyExchanges: []string{gossh.KeyExchangeECDHP256}}})
		if err == nil {
			c.Close()
		}
		return err
	}
	for _, compat := range []bool{false, true} {
		dir := t.TempDir()
		args := []string{"--state-dir", filepath.Join(dir, "state"), "--backend", "local", "--local-instances", "web1"}
		if compat {
			args = append(args, "--ssh-compat-algorithms")
		}
		g := startGateway(t, dir, args...)
		err := nist(g.ssh)
		switch {
		case !compat && (err == nil || !strings.Contains(err.Error(), "no common algorithm")):
			t.Errorf("default: a NIST-only client got %v, want no common algorithm", err)
		case compat && (err == nil || !strings.Contains(err.Error(), "unable to authenticate")):
			t.Errorf("--ssh-compat-algorithms: a NIST-only client got %v, want past the key exchange to authentication", err)
		}
		g.stop()
	}
}
