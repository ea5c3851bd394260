package kubernetes

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// TestGatewayRsyncInAPod: rsync -e ssh (the real client, OpenSSH) against
// a real gateway on the cluster, into a busybox pod with no rsync: a tree
// goes up and comes back byte-exact with its modes, mtimes (directories'
// too) and symlink, and one file to a new name becomes that name.
func TestGatewayRsyncInAPod(t *testing.T) {
	for _, bin := range []string{"rsync", "ssh"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
				t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but no %s: %v", bin, err)
			}
			t.Skipf("no %s client", bin)
		}
	}
	t.Parallel()
	pod := runPod(t, nil)
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, state)
	key := rsyncKey(t, g, state)
	_, port, _ := strings.Cut(g.sshAddr, ":")
	rsh := fmt.Sprintf("ssh -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o LogLevel=ERROR -i %s -p %s", key, port)
	run := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
		defer cancel()
		out, err := exec.CommandContext(ctx, "rsync", append([]string{"-e", rsh}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("rsync %v: %v: %s\n%s", args, err, out, g.logs)
		}
	}
	target := pod + "@127.0.0.1"

	src := filepath.Join(t.TempDir(), "src")
	writeTree(t, src)
	run("-a", src+"/", target+":/tmp/up/")
	down := filepath.Join(t.TempDir(), "down")
	run("-a", target+":/tmp/up/", down+"/")
	if got, want := listTree(t, down), listTree(t, src); got != want {
		t.Fatalf("the tree after a round trip through the pod:\n%s\nwant:\n%s", got, want)
	}

	run("-a", filepath.Join(src, "data.bin"), target+":/tmp/one.bin")
	one := filepath.Join(t.TempDir(), "one.bin")
	run("-a", target+":/tmp/one.bin", one)
	a, _ := os.ReadFile(filepath.Join(src, "data.bin"))
	b, err := os.ReadFile(one)
	if err != nil || sha256.Sum256(a) != sha256.Sum256(b) {
		t.Fatalf("one file to a new name and back: %v", err)
	}
}

// rsyncKey writes a client key file for OpenSSH, adds it to the gateway's
// authorized_keys (SIGHUP reloads it) and waits until the gateway takes it.
func rsyncKey(t *testing.T, g *gateway, state string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "id")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	ak := string(gossh.MarshalAuthorizedKey(g.signer.PublicKey())) + string(gossh.MarshalAuthorizedKey(signer.PublicKey()))
	if err := os.WriteFile(filepath.Join(state, "authorized_keys"), []byte(ak), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(g.proc.PID(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	cfg := &gossh.ClientConfig{User: "termgate", Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)}, HostKeyCallback: gossh.FixedHostKey(g.hostKey), Timeout: waitFor}
	for deadline := time.Now().Add(waitFor); ; time.Sleep(50 * time.Millisecond) {
		c, err := gossh.Dial("tcp", g.sshAddr, cfg)
		if err == nil {
			c.Close()
			return path
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not take the added key: %v", err)
		}
	}
}

// writeTree writes files of several modes, a symlink and directories,
// all with mtimes in the past.
func writeTree(t *testing.T, root string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sub", "deeper"), 0o755))
	data := make([]byte, 2<<20+3)
	_, _ = rand.Read(data)
	must(os.WriteFile(filepath.Join(root, "data.bin"), data, 0o644))
	must(os.WriteFile(filepath.Join(root, "sub", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(os.WriteFile(filepath.Join(root, "sub", "deeper", "secret"), []byte("s"), 0o600))
	must(os.Symlink("sub/run.sh", filepath.Join(root, "link")))
	must(os.Chmod(filepath.Join(root, "sub"), 0o750))
	when := time.Date(2022, 5, 6, 7, 8, 9, 0, time.UTC)
	for i, p := range []string{"sub/deeper/secret", "sub/deeper", "sub/run.sh", "sub", "data.bin", "."} {
		at := when.Add(time.Duration(i) * time.Hour)
		must(os.Chtimes(filepath.Join(root, p), at, at))
	}
}

// listTree is one line per entry: path, mode, mtime (not a symlink's),
// sha256 or link target.
func listTree(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.IsDir():
			line += " " + fi.ModTime().UTC().Format(time.RFC3339)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %s %x", fi.ModTime().UTC().Format(time.RFC3339), sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
