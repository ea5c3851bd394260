package main

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/sftpwire"
)

// envSFTPServer makes the test binary an SFTP server on its stdin and
// stdout (serveSFTP from that directory) for OpenSSH's sftp -D.
const envSFTPServer = "TERMGATE_TEST_SFTP_SERVER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envSFTPServer); dir != "" {
		// sftp -D speaks SFTP from the first byte: drop the ready line.
		out := &afterLine{w: os.Stdout}
		if err := serveSFTP(os.Stdin, out, dir, false); err != nil {
			os.Stderr.WriteString("sftp server: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// afterLine drops what is written up to the first newline.
type afterLine struct {
	w    io.WriteCloser
	past bool
}

func (a *afterLine) Write(p []byte) (int, error) {
	n := len(p)
	if !a.past {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			return n, nil
		}
		a.past, p = true, p[i+1:]
	}
	if _, err := a.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

func (a *afterLine) Close() error { return a.w.Close() }

// TestOpenSSHSFTPUsesTheLimits: OpenSSH's sftp, talking to serveSFTP,
// sees limits@openssh.com, moves 255 KiB per request (its -vvv log says
// which buffer sizes it uses) and copies a file up and down byte for byte.
func TestOpenSSHSFTPUsesTheLimits(t *testing.T) {
	bin, err := exec.LookPath("sftp")
	if err != nil {
		if os.Getenv("TERMGATE_REQUIRE_OPENSSH") == "1" {
			t.Fatalf("TERMGATE_REQUIRE_OPENSSH=1 but there is no sftp client: %v", err)
		}
		t.Skipf("no OpenSSH sftp client: %v", err)
	}
	dir := t.TempDir()
	data := make([]byte, 5<<20+77)
	_, _ = rand.Read(data)
	src := filepath.Join(t.TempDir(), "src.bin")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	down := filepath.Join(t.TempDir(), "down.bin")
	batch := filepath.Join(t.TempDir(), "batch")
	if err := os.WriteFile(batch, []byte("put "+src+" up.bin\nget up.bin "+down+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-vvv", "-b", batch, "-D", os.Args[0])
	cmd.Env = append(os.Environ(), envSFTPServer+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("sftp: %v\n%s\n%s", err, out, stderr.String())
	}
	log := stderr.String()
	if !strings.Contains(log, `Server supports extension "limits@openssh.com" revision 1`) {
		t.Errorf("sftp did not see the limits extension:\n%s", log)
	}
	if m := regexp.MustCompile(`using (\d+) / (\d+)`).FindStringSubmatch(log); m == nil || m[1] != "261120" || m[2] != "261120" {
		t.Errorf("sftp's buffer sizes: %v, want 261120 / 261120:\n%s", m, log)
	}
	for _, p := range []string{filepath.Join(dir, "up.bin"), down} {
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s differs (%d bytes, err %v)", p, len(got), err)
		}
	}
}

// TestLimitsShimKeepsPacketsWhole: a limits reply asked for while the
// server is half-way through a packet waits for its end, and the VERSION
// gets the extension with its length fixed.
func TestLimitsShimKeepsPacketsWhole(t *testing.T) {
	var out bytes.Buffer
	s := newLimitsShim(&out)
	version := []byte{0, 0, 0, 5, sftpwire.TypeVersion, 0, 0, 0, 3}
	// VERSION in two writes, then a packet's header alone.
	if _, err := s.Write(version[:3]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(version[3:]); err != nil {
		t.Fatal(err)
	}
	data := []byte{0, 0, 0, 6, 101, 0, 0, 0, 9, 0}
	if _, err := s.Write(data[:5]); err != nil {
		t.Fatal(err)
	}
	if err := s.reply(limitsReply(42)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(data[5:]); err != nil {
		t.Fatal(err)
	}
	b := out.Bytes()
	pkts := splitPackets(t, b)
	if len(pkts) != 3 {
		t.Fatalf("%d packets out, want VERSION, the server's, the reply: % x", len(pkts), b)
	}
	if !bytes.Contains(pkts[0], []byte(limitsExtension)) || pkts[0][4] != sftpwire.TypeVersion {
		t.Errorf("VERSION without the extension: % x", pkts[0])
	}
	if !bytes.Equal(pkts[1], data) {
		t.Errorf("the server's packet was cut: % x", pkts[1])
	}
	if pkts[2][4] != sftpwire.TypeExtendedReply || binary.BigEndian.Uint32(pkts[2][5:]) != 42 {
		t.Errorf("reply % x", pkts[2])
	}
}

// TestLimitsShimPassesOtherRequests: everything but the limits request
// reaches the server byte for byte, and the limits request does not.
func TestLimitsShimPassesOtherRequests(t *testing.T) {
	var in bytes.Buffer
	write := func(typ byte, body []byte) {
		in.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body)+1)))
		in.WriteByte(typ)
		in.Write(body)
	}
	ext := func(id uint32, name string, rest []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, id)
		b = sftpwire.AppendString(b, name)
		return append(b, rest...)
	}
	write(1, []byte{0, 0, 0, 3}) // INIT
	write(sftpwire.TypeExtended, ext(7, limitsExtension, nil))
	write(sftpwire.TypeExtended, ext(8, "posix-rename@openssh.com", []byte("xx")))
	write(6, make([]byte, 100000)) // a large WRITE-like packet, streamed
	want := append([]byte(nil), in.Bytes()...)
	var srv, out bytes.Buffer
	s := newLimitsShim(&out)
	s.version = nil // past the handshake: replies go straight out
	if err := s.filterRequests(&in, &srv); err != nil {
		t.Fatal(err)
	}
	pkts := splitPackets(t, want)
	var expect []byte
	for i, p := range pkts {
		if i != 1 {
			expect = append(expect, p...)
		}
	}
	if !bytes.Equal(srv.Bytes(), expect) {
		t.Errorf("the server got %d bytes, want %d (all but the limits request)", srv.Len(), len(expect))
	}
	if got := splitPackets(t, out.Bytes()); len(got) != 1 || binary.BigEndian.Uint32(got[0][5:]) != 7 {
		t.Errorf("replies: % x", out.Bytes())
	}
}

func splitPackets(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var pkts [][]byte
	for len(b) > 0 {
		if len(b) < 4 {
			t.Fatalf("a cut header: % x", b)
		}
		n := 4 + int(binary.BigEndian.Uint32(b))
		if n > len(b) {
			t.Fatalf("a cut packet (%d of %d bytes)", len(b), n)
		}
		pkts = append(pkts, b[:n])
		b = b[n:]
	}
	return pkts
}

// FuzzLimitsShim: whatever a client sends, the filter neither panics nor
// grows without bound, and whatever the server writes comes out with the
// same bytes in the same order (replies only between packets).
func FuzzLimitsShim(f *testing.F) {
	f.Add([]byte{0, 0, 0, 5, 1, 0, 0, 0, 3}, []byte{0, 0, 0, 5, 2, 0, 0, 0, 3})
	f.Add(append([]byte{0, 0, 0, 27, sftpwire.TypeExtended, 0, 0, 0, 1, 0, 0, 0, 18}, limitsExtension...), []byte{0, 0, 0, 1, 2})
	f.Add([]byte{0, 0, 0, 0}, []byte{255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, client, server []byte) {
		var out, srv bytes.Buffer
		s := newLimitsShim(&out)
		_ = s.filterRequests(bytes.NewReader(client), &srv)
		if srv.Len() > len(client) {
			t.Fatalf("the server got %d bytes from %d", srv.Len(), len(client))
		}
		_, _ = s.Write(server)
	})
}
