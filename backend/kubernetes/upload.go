package kubernetes

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/sessions"
)

// Durable sessions, Kubernetes side: the API has no file upload, so the
// holder goes in over an exec of uploadScript (and needs /bin/sh, which the
// backend needs anyway). An exec sees the container's real mounts, so a
// tmpfs /tmp (which Docker's archive API cannot see into) is just another
// directory here.

// uploadScript: $1 the directory (a fresh one of the upload's own, see
// exechost.launchScript), $2 the file's name. It says "ready tar" or
// "ready cat" (whether the container has tar: what stdin must then be, as
// `kubectl cp` does) before it reads stdin, once it could create the file
// there: a parent that is missing or read-only is refused (status 3)
// before the upload is sent, and so is a directory that exists already
// (mkdir without -p: one somebody else made is never written into).
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

// Upload copies data into dir as name over an exec (a tar stream where
// the container has tar, else the bare file). A refusal by the container
// wraps exechost.ErrRefused; anything else (the API server) is another
// error.
func (p pods) Upload(ctx context.Context, inst sessions.Instance, dir, name string, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	s, err := p.Exec(ctx, inst, []string{"/bin/sh", "-c", uploadScript, "termgate-upload", dir, name}, exechost.ExecOptions{Stdin: true})
	if err != nil {
		return err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()
	line, _ := readLine(s)
	var drain sync.WaitGroup
	if mode, ok := strings.CutPrefix(line, "ready "); ok {
		if mode == "tar" {
			data = exechost.HolderTar(data, path.Base(dir), name, 0, 0) // tar applies 0:0 only as root, whose files they are then
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
		return fmt.Errorf("%s: %w: status %d: %s", dir, exechost.ErrRefused, code, why)
	}
	return nil
}

// readLine reads r byte by byte up to a newline (the rest stays in r).
func readLine(r io.Reader) (string, error) {
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

// Exists reports which of paths exist in the container (one exec). A
// container without /bin/sh can host no holder: none.
func (p pods) Exists(ctx context.Context, inst sessions.Instance, paths []string) ([]bool, error) {
	t, err := parseID(inst)
	if err != nil {
		return nil, err
	}
	ex, err := p.executor(t, append([]string{"/bin/sh", "-c", existsScript, "termgate-exists"}, paths...), false)
	if err != nil {
		return nil, err
	}
	var stdout, stderr lockedBuffer
	stdout.n, stderr.n = 4<<10, 4<<10
	code, err := exitCode(ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}))
	have := make([]bool, len(paths))
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("look for the holder in %q: %w", t.pod, ctx.Err())
	case err != nil && noShell(err):
		return have, nil
	case err != nil:
		return nil, p.execErr(t, err)
	case code != 0:
		return have, nil // no usable shell (126, 127): no holder either
	}
	f := strings.Fields(stdout.String())
	if len(f) != len(paths) {
		return nil, fmt.Errorf("look for the holder in %q: %d answers for %d paths", t.pod, len(f), len(paths))
	}
	for i := range f {
		have[i] = f[i] == "1"
	}
	return have, nil
}

// noShell: the exec failed because the container has no /bin/sh to run.
func noShell(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "no such file or directory") || strings.Contains(msg, "executable file not found")
}

// HolderDirs: every directory may take the holder (the upload says).
func (p pods) HolderDirs(context.Context, sessions.Instance) ([]string, error) {
	return slices.Clone(exechost.HolderDirs), nil
}

// Instances lists the running instances of the namespace.
func (p pods) Instances(ctx context.Context) ([]sessions.Instance, error) {
	list, err := p.cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: p.selector.String()})
	if err != nil {
		return nil, p.apiErr("list", "pods", err)
	}
	var out []sessions.Instance
	for i := range list.Items {
		pod := &list.Items[i]
		if id, _ := p.instanceID(pod); id != "" && pod.Name != p.selfPod {
			out = append(out, instanceOf(pod.Name, id))
		}
	}
	return out, nil
}

// State says whether the instance's container still runs: the pod deleted
// or replaced, or the container ended or restarted, is Gone; a pod being
// deleted (its containers get SIGTERM) is Stopping.
func (p pods) State(ctx context.Context, inst sessions.Instance) (exechost.State, error) {
	t, err := parseID(inst)
	if err != nil {
		return exechost.Gone, nil
	}
	pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, t.pod, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return exechost.Gone, nil
	case err != nil:
		return exechost.Running, p.apiErr("get", "pods", err)
	case string(pod.UID) != t.uid:
		return exechost.Gone, nil
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name != t.container {
			continue
		}
		switch {
		case st.State.Running == nil || (t.containerID != "" && st.ContainerID != t.containerID):
			return exechost.Gone, nil
		case pod.DeletionTimestamp != nil:
			return exechost.Stopping, nil
		}
		return exechost.Running, nil
	}
	return exechost.Gone, nil
}

// gone reports whether the target's container no longer runs. Errors
// reaching the API server are not "gone".
func (b *Backend) gone(ctx context.Context, t target) bool {
	st, err := pods{b}.State(ctx, sessions.Instance{Name: t.pod, ID: t.uid + "/" + t.container + "/" + t.containerID})
	return err == nil && st == exechost.Gone
}
