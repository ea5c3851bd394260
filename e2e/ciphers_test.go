package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os/exec"
	"regexp"
	"testing"
)

// Every cipher the gateway offers carries bytes exactly both ways with
// the real OpenSSH client, chacha20-poly1305 above all: it is OpenSSH's
// first choice and the gateway's implementation of it is the patched one
// of third_party/golang.org/x/crypto (the payload's keystream through the
// AEAD's assembly). 4 MiB cross many full packets and the short ones
// around them; each run also checks, in ssh's own debug log, that the
// cipher asked for is the one negotiated.
func TestCiphersCarryBytesExactly(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	g := newGateway(t, options{containers: []string{"web-cipher"}})
	name := g.name("web-cipher")
	home := t.TempDir()
	data := make([]byte, 4<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	_, port, _ := net.SplitHostPort(g.sshAddr)
	run := func(cipher string, stdin []byte, command string) (stdout []byte) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		cmd := exec.CommandContext(ctx, sshBin, "-F", "/dev/null", "-o", "StrictHostKeyChecking=no",
			"-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
			"-o", "LogLevel=DEBUG1", "-i", g.keyFiles[keyAdmin], "-p", port, "-c", cipher,
			name+"@127.0.0.1", command)
		cmd.Env = sshEnv(home)
		var out, errOut bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("ssh -c %s %q: %v\nstderr (last 2 KB): %s", cipher, command, err, tail(errOut.String(), 2048))
		}
		negotiated := regexp.MustCompile(`server->client cipher: (\S+)`).FindSubmatch(errOut.Bytes())
		if negotiated == nil || string(negotiated[1]) != cipher {
			t.Fatalf("ssh -c %s: negotiated %q, want the cipher asked for", cipher, negotiated)
		}
		return out.Bytes()
	}
	for _, cipher := range []string{
		"chacha20-poly1305@openssh.com",
		"aes128-gcm@openssh.com",
		"aes256-gcm@openssh.com",
		"aes128-ctr",
		"aes256-ctr",
	} {
		t.Run(cipher, func(t *testing.T) {
			sum := run(cipher, data, "cat > /tmp/upload && sha256sum /tmp/upload")
			if got := regexp.MustCompile(`^[0-9a-f]{64}`).Find(sum); string(got) != hex.EncodeToString(want[:]) {
				t.Fatalf("upload through %s: the instance has sha256 %q, want %x", cipher, got, want)
			}
			back := run(cipher, nil, "cat /tmp/upload")
			if got := sha256.Sum256(back); got != want {
				t.Fatalf("download through %s: %d bytes with another sha256 than the %d sent", cipher, len(back), len(data))
			}
		})
	}
}
