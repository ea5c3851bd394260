package exechost

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/termgate/termgate/sessions"
)

// Files for a backend without a file API (Kubernetes; a containerd or Nomad
// backend would be another): Executor.Upload and Exists over nothing but
// Exec and /bin/sh. An exec sees the instance's real mounts, so a tmpfs
// /tmp (which Docker's archive API cannot see into) is just another
// directory here.

// uploadScript: $1 the directory (a fresh one of the upload's own, see
// launchScript), $2 the file's name. It says "ready tar" or "ready cat"
// (whether the instance has tar: what stdin must then be, as `kubectl cp`
// does) before it reads stdin, once it could create the file there: a
// parent that is missing or read-only is refused (status 3) before the
// upload is sent, and so is a directory that exists already (mkdir
// without -p: one somebody else made is never written into).
const uploadScript = `d=$1 f="$1/$2"
umask 077
if ! { mkdir -m 700 "$d" && : >"$f"; } 2>/dev/null; then
	echo "cannot write there (read-only, missing or taken)"
	exit 3
fi
if command -v tar >/dev/null 2>&1; then
	echo "ready tar"
	tar -xmf - -C "$d/.." || { rm -f "$f"; exit 3; }
else
	echo "ready cat"
	cat >"$f" && chmod 700 "$f" || { rm -f "$f"; exit 3; }
fi`

// existsScript prints 1 or 0 for each of its arguments: whether it exists.
const existsScript = `for p; do if [ -e "$p" ]; then echo 1; else echo 0; fi; done`

// UploadByExec is Executor.Upload over x's Exec: it copies data into dir
// as name with uploadScript (a tar stream where the instance has tar,
// else the bare file). A refusal by the instance wraps ErrRefused;
// anything else (the backend's API) is another error. Within one minute.
func UploadByExec(ctx context.Context, x Executor, inst sessions.Instance, dir, name string, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	s, err := x.Exec(ctx, inst, []string{"/bin/sh", "-c", uploadScript, "termgate-upload", dir, name}, ExecOptions{Stdin: true})
	if err != nil {
		return err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()
	line, _ := readByteLine(s)
	var drain sync.WaitGroup
	if mode, ok := strings.CutPrefix(line, "ready "); ok {
		if mode == "tar" {
			data = HolderTar(data, path.Base(dir), name, 0, 0) // tar applies 0:0 only as root, whose files they are then
		}
		// Send the file and end stdin; the script's output is read on,
		// or the exec would block writing it.
		drain.Go(func() { _, _ = io.Copy(io.Discard, s) })
		if _, err := s.Write(data); err == nil {
			_ = s.CloseWrite()
		}
		line = ""
	}
	code, err := s.Wait(ctx)
	_ = s.Close()
	drain.Wait()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("copy the holder into %q: %w", inst.Name, ctx.Err())
	case err != nil:
		return fmt.Errorf("copy the holder into %q: %w", inst.Name, err)
	case code != 0:
		why := strings.TrimSpace(line + " " + s.Stderr())
		return fmt.Errorf("%s: %w: status %d: %s", dir, ErrRefused, code, why)
	}
	return nil
}

// readByteLine reads r byte by byte up to a newline (the rest stays in r).
func readByteLine(r io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for b.Len() < 4096 {
		if _, err := r.Read(buf); err != nil {
			return b.String(), err
		}
		if buf[0] == '\n' {
			break
		}
		b.WriteByte(buf[0])
	}
	return strings.TrimSpace(b.String()), nil
}

// ExistsByExec is Executor.Exists over x's Exec: one exec of existsScript.
// An instance without /bin/sh can host no holder: none exists. noShell,
// when set, tells the backend's error for an exec whose program is missing
// (one that ended with the shell's 126 or 127 needs no telling).
func ExistsByExec(ctx context.Context, x Executor, inst sessions.Instance, paths []string, noShell func(error) bool) ([]bool, error) {
	s, err := x.Exec(ctx, inst, append([]string{"/bin/sh", "-c", existsScript, "termgate-exists"}, paths...), ExecOptions{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()
	out, _ := io.ReadAll(io.LimitReader(s, 4<<10))
	_, _ = io.Copy(io.Discard, s)
	code, err := s.Wait(ctx)
	have := make([]bool, len(paths))
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("look for the holder in %q: %w", inst.Name, ctx.Err())
	case err != nil && noShell != nil && noShell(err):
		return have, nil
	case err != nil:
		return nil, err
	case code != 0:
		return have, nil // no usable shell (126, 127): no holder either
	}
	f := strings.Fields(string(out))
	if len(f) != len(paths) {
		return nil, fmt.Errorf("look for the holder in %q: %d answers for %d paths", inst.Name, len(f), len(paths))
	}
	for i := range f {
		have[i] = f[i] == "1"
	}
	return have, nil
}
