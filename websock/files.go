package websock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/names"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// The files routes (GET and PUT /api/instances/{name}/files?path=P) read
// and write an instance's files through the same SFTP server that sftp and
// scp reach (remote.Runner.SFTP: the holder in the instance, as the user
// its shell runs as): one way into an instance's files, with its own
// permissions. Both stream: nothing holds a whole file. An upload is
// written beside its target and renamed over it once complete, so a cut
// or short upload never leaves a truncated file.
//
// A relative path is the SFTP server's start directory's: with
// session=ID, the working directory of that session's shell (the browser
// terminal drops a file "here"), else the user's home. The path is made
// absolute once, against the server's RealPath("."), so the answer can
// say where the file went (PUT's Content-Location) and the audit log
// names the file itself.

const (
	msgNoRemote = "file transfer refused: this gateway's backend cannot transfer files"
	// fileIdle bounds a stall of either side of a transfer (the
	// server's 30 s ReadTimeout would cut any large one).
	fileIdle = time.Minute
	// defaultMaxUpload is MaxUploadSize's default.
	defaultMaxUpload = 1 << 30
)

// isUpload reports a PUT to a files route: its body is bounded by
// MaxUploadSize, not MaxBodyBytes.
func isUpload(r *http.Request) bool {
	return r.Method == http.MethodPut && path.Base(r.URL.Path) == "files" && path.Dir(path.Dir(path.Dir(r.URL.Path))) == "/api"
}

// filesTarget checks the caller and the request, resolves the instance and
// opens an SFTP client on it, or answers. The caller closes the client and
// then the connection (done).
func (s *Server) filesTarget(w http.ResponseWriter, r *http.Request, dir string) (c caller, name, p string, cl *sftp.Client, done func(), ok bool) {
	c, _ = callerFrom(r.Context())
	p = r.URL.Query().Get("path")
	act := keys.ReadFiles
	if dir == "upload" {
		act = keys.WriteFiles
	}
	name, ok = s.decide(w, r, c, audit.Transfer, act, "path", clipPath(p), "direction", dir)
	if !ok {
		return c, "", "", nil, nil, false
	}
	session := r.URL.Query().Get("session")
	deny := func(status int, reason, msg string) {
		s.cfg.Audit.Event(audit.Transfer, s.who(r, c), name, "", "path", clipPath(p), "direction", dir, "result", "denied", "reason", reason)
		writeError(w, status, msg)
	}
	switch {
	case s.cfg.Remote == nil:
		deny(http.StatusForbidden, "no remote runner", msgNoRemote)
		return c, "", "", nil, nil, false
	case p == "" || len(p) > 4096 || strings.ContainsRune(p, 0):
		writeError(w, http.StatusBadRequest, "give the file as ?path=/absolute/path, or a path relative to the session's directory with &session=ID (at most 4096 bytes)")
		return c, "", "", nil, nil, false
	case session != "" && !names.ValidSessionID(session):
		writeError(w, http.StatusBadRequest, "session= is not a session id (the one the attached event names)")
		return c, "", "", nil, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	inst, err := s.cfg.Registry.Lookup(ctx, name)
	if err != nil {
		status, msg := s.attachFailure(ctx, name, err)
		writeError(w, status, msg)
		return c, "", "", nil, nil, false
	}
	// The request's context, not ctx: the stream lives as long as the
	// transfer (a backend may end it with the context it was opened under).
	// Only PUT writes; a download-only credential's GET never could,
	// but its server refuses writes all the same.
	// login=: the instance user the transfer runs as (the one
	// decision's login column); without it, the credential's default.
	login, ref := c.access.DecideLogin(r.URL.Query().Get("login"))
	if ref != nil {
		deny(http.StatusForbidden, ref.Reason, ref.Message)
		return c, "", "", nil, nil, false
	}
	opts := remote.SFTPOptions{CwdOf: session, ReadOnly: c.access.Decide(keys.WriteFiles) != nil, Login: login}
	if path.IsAbs(p) {
		opts.CwdOf = "" // nothing to resolve: no /proc scan in the instance
	}
	conn, err := s.cfg.Remote.SFTP(r.Context(), inst, opts)
	if err != nil {
		s.filesFailed(w, r, c, name, p, dir, err)
		return c, "", "", nil, nil, false
	}
	copts := []sftp.ClientOption{sftp.UseConcurrentWrites(true)}
	if dir == "upload" {
		copts = append(copts, sftp.MaxPacketUnchecked(uploadPacket))
	}
	cl, err = sftp.NewClientPipe(conn, conn, copts...)
	if err != nil {
		_ = conn.Close()
		s.filesFailed(w, r, c, name, p, dir, fmt.Errorf("the SFTP server in the instance did not answer: %w", err))
		return c, "", "", nil, nil, false
	}
	done = func() { _ = cl.Close(); _ = conn.Close() }
	if !path.IsAbs(p) {
		// The server's start directory (the session's, or home); a
		// server that cannot say leaves p relative to it.
		if wd, err := cl.Getwd(); err == nil && path.IsAbs(wd) {
			p = path.Join(wd, p)
		}
	}
	return c, name, p, cl, done, true
}

// uploadPacket is the SFTP data per write of an upload: 128 KiB, which
// both servers take (the holder's pkg/sftp and OpenSSH's sftp-server
// accept messages to 256 KiB), a quarter of the requests of the default
// 32 KiB (100 MiB PUT: 0.54 s against 0.68 s). Downloads keep 32 KiB: a
// server answers a larger read short, and the client's concurrent
// WriteTo then ends early (websock's byte-exact test caught it).
const uploadPacket = 128 << 10

// contentDisposition is an attachment header for a file named base (RFC
// 6266): a plain filename of printable ASCII for old clients (anything
// else an underscore), and the exact name as filename* (RFC 5987,
// UTF-8, percent-encoded).
func contentDisposition(base string) string {
	var plain, ext strings.Builder
	for _, r := range base {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' || r == '%' {
			plain.WriteByte('_')
		} else {
			plain.WriteRune(r)
		}
	}
	for i := 0; i < len(base); i++ {
		b := base[i]
		if b < 0x80 && (b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("!#$&+-.^_`|~", b) >= 0) {
			ext.WriteByte(b)
		} else {
			fmt.Fprintf(&ext, "%%%02X", b)
		}
	}
	return fmt.Sprintf(`attachment; filename="%s"; filename*=UTF-8''%s`, plain.String(), ext.String())
}

// contentLocation is the files route of the absolute path p.
func contentLocation(name, p string) string {
	return "/api/instances/" + url.PathEscape(name) + "/files?path=" + url.QueryEscape(p)
}

// filesFailed answers a transfer that could not start.
func (s *Server) filesFailed(w http.ResponseWriter, r *http.Request, c caller, name, p, dir string, err error) {
	var un *remote.Unavailable
	status, msg := http.StatusServiceUnavailable, fmt.Sprintf("cannot reach the files of instance %q right now; see the gateway log", name)
	switch {
	case errors.As(err, &un):
		msg = un.Why
	case errors.Is(err, sessions.ErrNotFound):
		status, msg = http.StatusNotFound, sessions.NotFoundMessage(name)
	case errors.Is(err, remote.ErrUnsupported):
		status, msg = http.StatusNotImplemented, "this backend does not serve files"
	case errors.As(err, new(*sessions.LoginError)):
		status, msg = http.StatusForbidden, err.Error()
	}
	s.log.Warn("file transfer failed to start", "instance", name, "err", err)
	s.cfg.Audit.Event(audit.Transfer, s.who(r, c), name, "", "path", clipPath(p), "direction", dir, "result", "failed", "reason", err.Error())
	writeError(w, status, msg)
}

// handleFileGet serves GET (and HEAD) /api/instances/{name}/files?path=P.
func (s *Server) handleFileGet(w http.ResponseWriter, r *http.Request) {
	c, name, p, cl, done, ok := s.filesTarget(w, r, "download")
	if !ok {
		return
	}
	defer done()
	f, err := cl.Open(p)
	if err != nil {
		s.fileError(w, r, c, name, p, "download", 0, err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		s.fileError(w, r, c, name, p, "download", 0, err)
		return
	}
	if !st.Mode().IsRegular() {
		s.fileError(w, r, c, name, p, "download", 0, errNotRegular)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	w.Header().Set("Content-Disposition", contentDisposition(path.Base(p)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		// The page asks first (a clear error, not a failed download):
		// nothing is transferred, nothing to audit.
		return
	}
	rc := http.NewResponseController(w)
	// WriteTo, not io.Copy through a LimitReader (which hides it): the
	// SFTP client then keeps many reads in flight instead of one 32 KiB
	// round trip at a time (100 MiB: 4.4 s before). capWriter keeps the
	// stat'd size as the bound of a file that grows meanwhile.
	cw := &capWriter{w: deadlineWriter{w: w, rc: rc}, left: st.Size()}
	_, err = f.WriteTo(cw)
	if errors.Is(err, errCapped) {
		err = nil
	}
	n := cw.n
	result := "ok"
	if err != nil || n != st.Size() {
		// Too late for a status: the short body (Content-Length) says
		// the download failed.
		result = "failed"
		s.log.Info("download cut short", "instance", name, "bytes", n, "err", err)
	}
	s.cfg.Audit.Event(audit.Transfer, s.who(r, c), name, "", "path", clipPath(p), "direction", "download", "bytes", n, "result", result)
}

// handleFilePut serves PUT /api/instances/{name}/files?path=P.
func (s *Server) handleFilePut(w http.ResponseWriter, r *http.Request) {
	c, name, p, cl, done, ok := s.filesTarget(w, r, "upload")
	if !ok {
		return
	}
	defer done()
	tmp := path.Join(path.Dir(p), "."+path.Base(p)+".termgate-upload-"+randomHex())
	f, err := cl.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		s.fileError(w, r, c, name, p, "upload", 0, err)
		return
	}
	rc := http.NewResponseController(w)
	n, err := io.Copy(f, deadlineReader{r: r.Body, rc: rc, size: r.ContentLength})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && r.ContentLength >= 0 && n != r.ContentLength {
		err = fmt.Errorf("the body ended after %d of its %d bytes", n, r.ContentLength)
	}
	if err == nil {
		// Keep the mode of a file it replaces (as an editor's save does).
		if st, serr := cl.Stat(p); serr == nil && st.Mode().IsRegular() {
			_ = cl.Chmod(tmp, st.Mode().Perm())
		}
		err = cl.PosixRename(tmp, p)
	}
	if err != nil {
		s.dropUpload(r, cl, name, tmp)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.cfg.Audit.Event(audit.Transfer, s.who(r, c), name, "", "path", clipPath(p), "direction", "upload", "bytes", n, "result", "denied", "reason", "too large")
			writeError(w, http.StatusRequestEntityTooLarge, bodyTooLarge(tooBig.Limit))
			return
		}
		s.fileError(w, r, c, name, p, "upload", n, err)
		return
	}
	s.cfg.Audit.Event(audit.Transfer, s.who(r, c), name, "", "path", clipPath(p), "direction", "upload", "bytes", n, "result", "ok")
	// Where the file went (the page prints it): p is absolute unless
	// the server could not say its directory.
	w.Header().Set("Content-Location", contentLocation(name, p))
	w.WriteHeader(http.StatusNoContent)
}

var errNotRegular = errors.New("not a regular file")

// fileError answers a failed transfer with what the user can act on.
func (s *Server) fileError(w http.ResponseWriter, r *http.Request, c caller, name, p, dir string, n int64, err error) {
	status, msg := http.StatusBadGateway, fmt.Sprintf("%s %s failed: %v", dir, p, err)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		status, msg = http.StatusNotFound, fmt.Sprintf("no file %s in instance %q", p, name)
	case errors.Is(err, fs.ErrPermission):
		status, msg = http.StatusForbidden, fmt.Sprintf("%s: permission denied in the instance", p)
	case errors.Is(err, errNotRegular):
		status, msg = http.StatusBadRequest, fmt.Sprintf("%s is not a regular file (a directory?)", p)
	case r.Context().Err() != nil:
		status, msg = http.StatusBadRequest, "the request was cut off"
	}
	s.log.Info("file transfer failed", "instance", name, "direction", dir, "err", err)
	s.cfg.Audit.Event(audit.Transfer, s.who(r, c), name, "", "path", clipPath(p), "direction", dir, "bytes", n, "result", "failed", "reason", err.Error())
	writeError(w, status, msg)
}

// dropUpload removes the partial upload tmp. The request's SFTP stream
// ends with its context, so when the client went away (the usual reason
// for a cut upload) a stream of its own does it, bounded in time: a cut
// upload never leaves its hidden file beside the target (red team round
// 4, L2).
func (s *Server) dropUpload(r *http.Request, cl *sftp.Client, name, tmp string) {
	if r.Context().Err() == nil && cl.Remove(tmp) == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
	defer cancel()
	inst, err := s.cfg.Registry.Lookup(ctx, name)
	if err != nil {
		s.log.Warn("a cut upload's partial file is left", "instance", name, "file", tmp, "err", err)
		return
	}
	opts := remote.SFTPOptions{}
	if !path.IsAbs(tmp) {
		opts.CwdOf = r.URL.Query().Get("session")
	}
	conn, err := s.cfg.Remote.SFTP(ctx, inst, opts)
	if err == nil {
		var c2 *sftp.Client
		if c2, err = sftp.NewClientPipe(conn, conn); err == nil {
			if err = c2.Remove(tmp); errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
			_ = c2.Close()
		}
		_ = conn.Close()
	}
	if err != nil {
		s.log.Warn("a cut upload's partial file is left", "instance", name, "file", tmp, "err", err)
	}
}

// deadlineReader reads a request body, moving the connection's read
// deadline on before every read: a slow upload goes on as long as it
// moves; one that stalls for fileIdle ends.
type deadlineReader struct {
	r    io.Reader
	rc   *http.ResponseController
	size int64 // the body's Content-Length, -1 when unknown
}

// Size is what the SFTP client's ReadFrom asks of its source to keep many
// writes in flight (-1: as many as it may). Without it, a source of no
// known size gets one 32 KiB write and its round trip at a time: a 100 MiB
// PUT took 3.5 times docker cp.
func (d deadlineReader) Size() int64 { return d.size }

func (d deadlineReader) Read(p []byte) (int, error) {
	_ = d.rc.SetReadDeadline(time.Now().Add(fileIdle))
	return d.r.Read(p)
}

// deadlineWriter is deadlineReader's counterpart for a download: a client
// that stops reading is dropped after fileIdle.
// capWriter passes on at most left bytes, then fails with errCapped.
type capWriter struct {
	w       io.Writer
	left, n int64
}

var errCapped = errors.New("the file grew past its size at the start")

func (c *capWriter) Write(p []byte) (int, error) {
	capped := int64(len(p)) > c.left
	if capped {
		p = p[:c.left]
	}
	m, err := c.w.Write(p)
	c.n += int64(m)
	c.left -= int64(m)
	if err == nil && capped {
		err = errCapped
	}
	return m, err
}

type deadlineWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(fileIdle))
	return d.w.Write(p)
}

func clipPath(p string) string {
	if len(p) > 512 {
		return p[:512] + "…"
	}
	return p
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
