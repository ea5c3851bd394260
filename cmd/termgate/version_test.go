package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

func testHostKey(t *testing.T) gossh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestVersion: --version is a flag of its own, and what it prints names
// the release, the commit and the Go version.
func TestVersion(t *testing.T) {
	o, err := parseFlags([]string{"--version"}, env(nil))
	if err != nil || !o.version {
		t.Fatalf("--version: %+v, %v", o, err)
	}
	if v := versionString(); !regexp.MustCompile(`^termgate \S+ \(commit \S+, go\S+ \w+/\w+\)$`).MatchString(v) {
		t.Fatalf("version %q", v)
	}
}

// TestAnnounceHostKeyFingerprint: the start-up lines and log name the
// host key's SHA256 fingerprint, as ssh-keygen -l and ssh's first prompt
// print it.
func TestAnnounceHostKeyFingerprint(t *testing.T) {
	k := testHostKey(t)
	var out, logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ssh := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222}
	web := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	announce(&out, false, &options{tokenFile: "/t", backend: "local"}, log, ssh, web, k, "", false)
	fp := gossh.FingerprintSHA256(k)
	if !strings.HasPrefix(fp, "SHA256:") || !strings.Contains(out.String(), "Host key: ssh-ed25519 "+fp) || !strings.Contains(logs.String(), "host_key="+fp) {
		t.Fatalf("fingerprint %s not in\n%s\n%s", fp, out.String(), logs.String())
	}
}
