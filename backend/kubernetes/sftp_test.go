package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/remote"
)

// TestSFTPInAPod: a Backend that is not durable serves SFTP in a pod
// through the holder (uploaded, installed, run through exec), several MiB
// each way byte for byte.
func TestSFTPInAPod(t *testing.T) {
	t.Parallel()
	needHolder(t)
	b := clusterBackend(t, Config{GatewayID: "tgtest" + randomHex(3)})
	pod := runPod(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := b.SFTP(ctx, lookupPod(t, b, pod), remote.SFTPOptions{})
	if err != nil {
		t.Fatalf("SFTP: %v", err)
	}
	c, err := sftp.NewClientPipe(conn, conn)
	if err != nil {
		t.Fatalf("sftp client: %v", err)
	}
	data := make([]byte, 4<<20+3)
	_, _ = rand.Read(data)
	f, err := c.Create("/tmp/up.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	sum := sha256.Sum256(data)
	if got := podSh(t, pod, "sha256sum /tmp/up.bin"); !strings.HasPrefix(got, hex.EncodeToString(sum[:])) {
		t.Fatalf("in the pod: %s", got)
	}
	r, err := c.Open("/tmp/up.bin")
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("downloaded %d bytes (err %v), differ", len(back), err)
	}
	_ = c.Close()
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
}
