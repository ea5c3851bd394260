package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLegacyScp: `scp -O` (the old scp protocol) is a command, `scp -t`
// or `scp -f`, which runs the instance's own scp through the command path:
// byte-exact both ways in an image that has one (the glibc image carries
// OpenSSH's), and a plain error naming the missing program in one that
// has not (busybox), with the file left alone.
func TestLegacyScp(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	scpBin := filepath.Join(filepath.Dir(sshBin), "scp")
	if _, err := os.Stat(scpBin); err != nil {
		t.Fatalf("no scp beside %s: %v", sshBin, err)
	}
	needGlibcImage(t)
	d := durableGateway(t, options{containers: []string{"web-noscp"}})
	withScp := d.runContainer(t, "web-scp", glibcImage)
	noScp := d.name("web-noscp")

	dir := t.TempDir()
	data := make([]byte, 2<<20+3)
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	local := filepath.Join(dir, "up.bin")
	if err := os.WriteFile(local, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := d.scp(t, scpBin, "-O", local, withScp+"@127.0.0.1:/tmp/up.bin"); err != nil {
		t.Fatalf("scp -O upload: %v: %s", err, out)
	}
	if got := strings.Fields(dockerExec(t, withScp, "sha256sum /tmp/up.bin")); len(got) == 0 || got[0] != hex.EncodeToString(sum[:]) {
		t.Fatalf("scp -O upload: sha256 in the container %v", got)
	}
	down := filepath.Join(dir, "down.bin")
	if out, err := d.scp(t, scpBin, "-O", withScp+"@127.0.0.1:/tmp/up.bin", down); err != nil {
		t.Fatalf("scp -O download: %v: %s", err, out)
	}
	if got, err := os.ReadFile(down); err != nil || sha256.Sum256(got) != sum {
		t.Fatalf("scp -O download differs (%d bytes, %v)", len(got), err)
	}

	out, err := d.scp(t, scpBin, "-O", local, noScp+"@127.0.0.1:/tmp/up.bin")
	if err == nil || !strings.Contains(string(out), "scp: not found") {
		t.Fatalf("scp -O into an image without scp: %v, %q; want a failure naming scp", err, out)
	}
	if got := dockerExec(t, noScp, "ls /tmp"); strings.Contains(got, "up.bin") {
		t.Fatalf("scp -O without scp left %q", got)
	}
}
