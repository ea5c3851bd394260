package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFilesAndForwarding: through the real gateway binary and the Docker
// backend, scp both ways, the HTTP files routes both ways and an ssh -W
// forward to a service listening only on the loopback of a --network none
// container, all byte-exact (sha256), the holder doing the work inside.
func TestFilesAndForwarding(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	scpBin := filepath.Join(filepath.Dir(sshBin), "scp")
	if _, err := os.Stat(scpBin); err != nil {
		t.Fatalf("no scp beside %s: %v", sshBin, err)
	}
	needHolder(t)
	g := newGateway(t, options{containers: []string{"web-files"}})
	name := g.name("web-files")
	host := name + "@127.0.0.1"
	dir := t.TempDir()
	data := make([]byte, 3<<20+5)
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	local := filepath.Join(dir, "up.bin")
	if err := os.WriteFile(local, data, 0o600); err != nil {
		t.Fatal(err)
	}
	scp := func(args ...string) {
		t.Helper()
		if out, err := g.scp(t, scpBin, args...); err != nil {
			t.Fatalf("scp %v: %v: %s", args, err, out)
		}
	}

	// scp (SFTP mode) up, then down.
	scp(local, host+":/tmp/up.bin")
	if got := strings.Fields(dockerExec(t, name, "sha256sum /tmp/up.bin")); len(got) == 0 || got[0] != want {
		t.Fatalf("scp upload: sha256 in the container %v, want %s", got, want)
	}
	down := filepath.Join(dir, "down.bin")
	scp(host+":/tmp/up.bin", down)
	if got, err := os.ReadFile(down); err != nil || sha256.Sum256(got) != sum {
		t.Fatalf("scp download differs (%d bytes, %v)", len(got), err)
	}

	// The HTTP files routes.
	put, err := http.NewRequest("PUT", g.baseURL+"/api/instances/"+name+"/files?path=/tmp/http.bin", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	put.Header.Set("Authorization", "Bearer "+g.tokens[tokAdmin])
	resp, err := g.http.Do(put)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT files: %d", resp.StatusCode)
	}
	if got := strings.Fields(dockerExec(t, name, "sha256sum /tmp/http.bin")); len(got) == 0 || got[0] != want {
		t.Fatalf("PUT files: sha256 in the container %v, want %s", got, want)
	}
	status, body := g.request(t, "GET", "/api/instances/"+name+"/files?path=/tmp/up.bin", tokAdmin, nil)
	if status != http.StatusOK || sha256.Sum256(body) != sum {
		t.Fatalf("GET files: %d, %d bytes (sha256 equal %v)", status, len(body), sha256.Sum256(body) == sum)
	}
	if status, _ := g.request(t, "GET", "/api/instances/"+name+"/files?path=/tmp/none", tokAdmin, nil); status != http.StatusNotFound {
		t.Fatalf("GET of a missing file: %d, want 404", status)
	}

	// ssh -W to a service on the container's own loopback (it has no
	// other network).
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := docker(ctx, "exec", "-d", name, "nc", "-ll", "-p", "8080", "-e", "cat"); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for deadline := time.Now().Add(waitFor); ; {
		var code int
		var errOut []byte
		out, errOut, code = g.sshRun(t, sshBin, keyAdmin, data, "-W", "127.0.0.1:8080", host)
		if code == 0 && len(out) == len(data) || time.Now().After(deadline) {
			if code != 0 {
				t.Fatalf("ssh -W: status %d, stderr %q", code, errOut)
			}
			break
		}
		time.Sleep(100 * time.Millisecond) // nc not listening yet
	}
	if sha256.Sum256(out) != sum {
		t.Fatalf("ssh -W echo: %d bytes back of %d, sha256 differs", len(out), len(data))
	}

	// /metrics counts what the audit trail recorded: two files up (scp,
	// PUT) and two down (scp, GET), their bytes, the forward.
	status, body = g.request(t, "GET", "/metrics", tokAdmin, nil)
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d", status)
	}
	for series, want := range map[string]float64{
		`termgate_transfers_total{direction="upload",result="ok"}`:   2,
		`termgate_transfers_total{direction="download",result="ok"}`: 2,
		`termgate_transfer_bytes_total{direction="upload"}`:          float64(2 * len(data)),
		`termgate_transfer_bytes_total{direction="download"}`:        float64(2 * len(data)),
	} {
		if got, ok := metricValue(string(body), series); !ok || got != want {
			t.Errorf("/metrics: %s is %v (found %v), want %v", series, got, ok, want)
		}
	}
	if n, _ := metricValue(string(body), `termgate_forwards_total{result="ok"}`); n < 1 {
		t.Errorf("/metrics counts %v forwards, want at least 1", n)
	}
}

// metricValue is the value of one series in a Prometheus text page.
func metricValue(page, series string) (float64, bool) {
	for _, l := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// scp runs OpenSSH's scp with the admin key against the gateway.
func (g *gateway) scp(t *testing.T, scpBin string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, port, _ := net.SplitHostPort(g.sshAddr)
	base := []string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", g.keyFiles[keyAdmin], "-P", port}
	cmd := exec.CommandContext(ctx, scpBin, append(base, args...)...)
	cmd.Env = sshEnv(t.TempDir())
	return cmd.CombinedOutput()
}
