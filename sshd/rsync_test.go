package sshd

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// fakeRsync is a Runner whose rsync server is serve, run on the
// process's stdin and stdout; it records the options it was started with.
type fakeRsync struct {
	filesRunner
	serve func(in io.Reader, out io.Writer) int

	mu     sync.Mutex
	opts   []remote.RsyncOptions
	closed int
}

func (f *fakeRsync) Rsync(ctx context.Context, inst sessions.Instance, opts remote.RsyncOptions) (remote.Process, error) {
	f.mu.Lock()
	f.opts = append(f.opts, opts)
	f.mu.Unlock()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &fakeProcess{f: f, in: inW, out: outR, inR: inR, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.code = f.serve(inR, outW)
		_ = outW.Close()
	}()
	return p, nil
}

// fakeProcess is a fakeRsync server as a remote.Process.
type fakeProcess struct {
	f    *fakeRsync
	in   *io.PipeWriter
	inR  *io.PipeReader
	out  *io.PipeReader
	done chan struct{}
	code int
	once sync.Once
}

func (p *fakeProcess) Read(b []byte) (int, error)  { return p.out.Read(b) }
func (p *fakeProcess) Write(b []byte) (int, error) { return p.in.Write(b) }
func (p *fakeProcess) CloseWrite() error           { return p.in.Close() }
func (p *fakeProcess) Resize(context.Context, sessions.Size) error {
	return nil
}

func (p *fakeProcess) Wait(ctx context.Context) (remote.Exit, error) {
	select {
	case <-p.done:
		return remote.Exit{Code: p.code}, nil
	case <-ctx.Done():
		return remote.Exit{}, ctx.Err()
	}
}

// Close ends the server as a kill would: its input and output break.
func (p *fakeProcess) Close() error {
	p.once.Do(func() {
		_ = p.inR.CloseWithError(io.ErrClosedPipe)
		_ = p.out.CloseWithError(io.ErrClosedPipe)
		<-p.done
		p.f.mu.Lock()
		p.f.closed++
		p.f.mu.Unlock()
	})
	return nil
}

func newRsyncUnitFixture(t *testing.T, al *auditLog, serve func(io.Reader, io.Writer) int) (*fixture, *fakeRsync) {
	t.Helper()
	fr := &fakeRsync{serve: serve}
	f := newFixture(t, func(c *Config) {
		c.Remote = fr
		c.Audit = audit.New(&al.buf)
	})
	addKeys(t, f, map[string]string{"downloader": `files="download" `})
	return f, fr
}

// TestRsyncRelaysAndAudits: the server gets the client's words parsed,
// its stream and exit status reach the client unchanged, the record
// carries the direction, path and bytes; a download-only key's download
// runs read-only and its upload is refused before anything starts.
func TestRsyncRelaysAndAudits(t *testing.T) {
	al := &auditLog{}
	f, fr := newRsyncUnitFixture(t, al, func(in io.Reader, out io.Writer) int {
		b, _ := io.ReadAll(in)
		_, _ = out.Write([]byte(strings.ToUpper(string(b))))
		return 3
	})
	c := f.dial(t, "downloader", "web1")
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	s.Stdin = strings.NewReader("hello")
	out, err := s.Output(`rsync --server --sender -logDtpre.iLsfxC . 'my dir/'`)
	var ee *gossh.ExitError
	if !asExit(err, &ee) || ee.ExitStatus() != 3 || string(out) != "HELLO" {
		t.Fatalf("rsync: %v, stdout %q; want status 3 and HELLO", err, out)
	}
	ev := al.wait(t, audit.Transfer, map[string]any{"instance": "web1", "protocol": "rsync", "direction": "download", "path": "my dir/", "result": "failed", "exit_code": 3})
	if ev["bytes"] != float64(5) || ev["bytes_in"] != float64(5) || ev["bytes_out"] != float64(5) {
		t.Errorf("record %v: want 5 bytes each way", ev)
	}
	fr.mu.Lock()
	opts := slices.Clone(fr.opts)
	fr.mu.Unlock()
	if len(opts) != 1 || !opts[0].ReadOnly || !slices.Equal(opts[0].Args, []string{"--server", "--sender", "-logDtpre.iLsfxC", ".", "my dir/"}) {
		t.Fatalf("started with %+v", opts)
	}

	r := f.run(t, "downloader", "web1", "rsync --server -logDtpre.iLsfxC . /tmp/x")
	if r.code != 1 || !strings.Contains(r.stderr, "download") {
		t.Fatalf("download-only upload: status %d, stderr %q", r.code, r.stderr)
	}
	al.wait(t, audit.Transfer, map[string]any{"instance": "web1", "protocol": "rsync", "direction": "upload", "result": "denied"})
	fr.mu.Lock()
	n := len(fr.opts)
	fr.mu.Unlock()
	if n != 1 {
		t.Fatalf("the refused upload started a server (%d starts)", n)
	}
}

// TestRsyncHostileServerIsCut: a server that floods its output and never
// ends costs the gateway nothing once the client goes: the transfer ends,
// the server is closed, nothing stays running.
func TestRsyncHostileServerIsCut(t *testing.T) {
	al := &auditLog{}
	f, fr := newRsyncUnitFixture(t, al, func(in io.Reader, out io.Writer) int {
		buf := make([]byte, 32<<10)
		for {
			if _, err := out.Write(buf); err != nil {
				return 137
			}
		}
	})
	c := f.dial(t, "admin", "web1")
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start("rsync --server -logDtpre.iLsfxC . /tmp/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(stdout, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	eventually(t, "the transfer ended and its server was closed", func() bool {
		fr.mu.Lock()
		defer fr.mu.Unlock()
		return fr.closed == 1 && f.srv.remoteRunning() == 0
	})
	al.wait(t, audit.Transfer, map[string]any{"instance": "web1", "protocol": "rsync", "direction": "upload", "result": "cut"})
}

// TestRsyncRevoked: a transfer whose key is revoked is cut at once: the
// server closed, the connection ended, a "revoked" record.
func TestRsyncRevoked(t *testing.T) {
	al := &auditLog{}
	f, fr := newRsyncUnitFixture(t, al, func(in io.Reader, out io.Writer) int {
		_, _ = out.Write([]byte("ready"))
		_, _ = io.Copy(io.Discard, in) // until the client ends or the server is closed
		return 0
	})
	c := f.dial(t, "web", "web1")
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StdinPipe(); err != nil { // held open: the server waits
		t.Fatal(err)
	}
	if err := s.Start("rsync --server --sender -logDtpre.iLsfxC . x"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(stdout, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	f.setKeys(t, map[string]string{"admin": ""})
	f.srv.Recheck()
	if err := s.Wait(); err == nil {
		t.Fatal("the revoked transfer ended well")
	}
	eventually(t, "the server closed and nothing running", func() bool {
		fr.mu.Lock()
		defer fr.mu.Unlock()
		return fr.closed == 1 && f.srv.remoteRunning() == 0
	})
	al.wait(t, audit.Transfer, map[string]any{"instance": "web1", "protocol": "rsync", "result": "revoked"})
}
