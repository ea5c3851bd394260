package docker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/docker/docker/pkg/stdcopy"
)

// FuzzDemux: whatever the engine (or something posing as it) sends, the
// demultiplexer returns exactly the stdout stdcopy would, keeps stderr
// apart, and never panics or returns more than asked.
func FuzzDemux(f *testing.F) {
	var seed bytes.Buffer
	_, _ = stdcopy.NewStdWriter(&seed, stdcopy.Stdout).Write([]byte("hello "))
	_, _ = stdcopy.NewStdWriter(&seed, stdcopy.Stderr).Write([]byte("no holder answers"))
	_, _ = stdcopy.NewStdWriter(&seed, stdcopy.Stdout).Write([]byte("world"))
	f.Add(seed.Bytes(), 3)
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 9, 'a'}, 1)
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 2, 'x', 'y'}, 5)
	f.Add([]byte{7, 0, 0, 0, 0, 0, 0, 0}, 5)
	f.Fuzz(func(t *testing.T, in []byte, chunk int) {
		chunk = 1 + (chunk&0xffff)%4096
		d := newDemuxReader(bytes.NewReader(in), nil)
		var got bytes.Buffer
		buf := make([]byte, chunk)
		var err error
		for {
			var n int
			n, err = d.Read(buf)
			if n > chunk || n < 0 {
				t.Fatalf("Read returned %d bytes into %d", n, chunk)
			}
			got.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if len(d.Stderr()) > demuxStderrMax {
			t.Fatalf("kept %d bytes of stderr", len(d.Stderr()))
		}
		// stdcopy allocates what a header claims: compare with it only
		// for sane frames.
		for pos := 0; pos+8 <= len(in); {
			size := int(binary.BigEndian.Uint32(in[pos+4:]))
			if size > 1<<16 {
				return
			}
			pos += 8 + size
		}
		var want, wantErr bytes.Buffer
		_, werr := stdcopy.StdCopy(&want, &wantErr, bytes.NewReader(in))
		if errors.Is(err, io.EOF) && (werr != nil || !bytes.Equal(got.Bytes(), want.Bytes())) {
			t.Fatalf("a clean end with stdout %q; stdcopy: %q, %v", got.Bytes(), want.Bytes(), werr)
		}
		// stdcopy drops a truncated last frame silently; this reader
		// returns what arrived of it, then an error.
		if werr == nil && !bytes.HasPrefix(got.Bytes(), want.Bytes()) {
			t.Fatalf("stdout %q does not begin with stdcopy's %q", got.Bytes(), want.Bytes())
		}
	})
}

// TestDemuxStderrWriter: with a writer, stderr frames go to it whole and
// in order (none kept), and a writer that fails does not break stdout.
func TestDemuxStderrWriter(t *testing.T) {
	var in bytes.Buffer
	big := bytes.Repeat([]byte("e"), 3*demuxStderrMax)
	_, _ = stdcopy.NewStdWriter(&in, stdcopy.Stderr).Write(big)
	_, _ = stdcopy.NewStdWriter(&in, stdcopy.Stdout).Write([]byte("out"))
	_, _ = stdcopy.NewStdWriter(&in, stdcopy.Stderr).Write([]byte("tail"))
	raw := in.Bytes()

	var errOut bytes.Buffer
	d := newDemuxReader(bytes.NewReader(raw), &errOut)
	out, err := io.ReadAll(d)
	if err != nil || string(out) != "out" || errOut.String() != string(big)+"tail" || d.Stderr() != "" {
		t.Fatalf("stdout %q, %v; stderr %d bytes; kept %q", out, err, errOut.Len(), d.Stderr())
	}

	d = newDemuxReader(bytes.NewReader(raw), failingWriter{})
	if out, err := io.ReadAll(d); err != nil || string(out) != "out" {
		t.Fatalf("with a failing stderr writer: stdout %q, %v", out, err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("gone") }
