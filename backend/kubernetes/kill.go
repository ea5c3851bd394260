package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/termgate/termgate/backend/procmark"
)

// killTimeout bounds the cleanup Start does on its own.
const killTimeout = 10 * time.Second

// Kill ends the shell and every process of its session, background and
// setsid jobs included (procmark.KillScript in a second exec), then ends
// the stream. It is idempotent, and quick when the pod or its container is
// gone (then there is nothing left to kill). When the API server cannot be
// reached it fails: the processes live on, so the caller calls it again.
func (p *process) Kill(ctx context.Context) error {
	p.kmu.Lock()
	defer p.kmu.Unlock()
	if p.killed {
		return nil
	}
	procs, err := p.b.kills.Kill(ctx, p.t.key(), p.session)
	if err == nil {
		err = p.waitEnded(ctx)
	}
	p.close()
	if err != nil {
		return fmt.Errorf("kill shell in %q: %w", p.name, err)
	}
	p.killed = true
	p.b.log.Debug("kubernetes: killed session", "instance", p.name, "session", p.session, "processes", len(procs))
	return nil
}

// waitEnded checks that the exec's stream ends after the kill, for at most
// two seconds. A pod deleted meanwhile may leave its stream open but silent
// (kubernetes/kubernetes#129144): that is no failure, the stream is ended
// here.
func (p *process) waitEnded(ctx context.Context) error {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	if p.b.gone(ctx, p.t) {
		return nil
	}
	return errors.New("the shell still runs after SIGKILL (did it change user?)")
}

// key names a kill lane: one kill exec at a time per container.
func (t target) key() string {
	return strings.Join([]string{t.pod, t.container, t.uid, t.containerID}, "\n")
}

func targetOfKey(key string) target {
	f := strings.SplitN(key, "\n", 4)
	for len(f) < 4 {
		f = append(f, "")
	}
	return target{pod: f[0], container: f[1], uid: f[2], containerID: f[3]}
}

// runKill runs procmark.KillScript in the container for modes (markers, or
// one --prefix= or --all). A pod or container that is gone has nothing left
// to kill: that is not an error.
func (b *Backend) runKill(ctx context.Context, key string, modes []string) ([]procmark.Ended, error) {
	t := targetOfKey(key)
	cmd := append([]string{"/bin/sh", "-c", procmark.KillScript, "termgate-kill"}, modes...)
	ex, err := b.executor(t, cmd, false)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{
		Stdout: &limitWriter{w: &stdout, n: 1 << 20},
		Stderr: &limitWriter{w: &stderr, n: 4 << 10},
	})
	if ctx.Err() != nil {
		return nil, fmt.Errorf("kill exec: %w", ctx.Err())
	}
	procs := procmark.ParseEnded(stdout.String())
	code, err := exitCode(err)
	switch {
	case err != nil:
		if b.gone(ctx, t) {
			return procs, nil
		}
		return procs, b.execErr(t, err)
	case code != 0:
		if b.gone(ctx, t) {
			return procs, nil // the container stopped under the script
		}
		return procs, fmt.Errorf("kill script exited with status %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	return procs, nil
}

// gone reports whether the target's container no longer runs: the pod is
// deleted or replaced, or the container ended or restarted. Errors reaching
// the API server are not "gone".
func (b *Backend) gone(ctx context.Context, t target) bool {
	pod, err := b.cs.CoreV1().Pods(b.ns).Get(ctx, t.pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil || string(pod.UID) != t.uid {
		return err == nil
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == t.container {
			return st.State.Running == nil || (t.containerID != "" && st.ContainerID != t.containerID)
		}
	}
	return true
}

// Sweep ends the marked shells (and their sessions' processes) in every
// running instance of the namespace: with the exec streams of an earlier
// gateway run gone, nothing else would ever end them.
func (b *Backend) Sweep(ctx context.Context) error {
	list, err := b.cs.CoreV1().Pods(b.ns).List(ctx, metav1.ListOptions{LabelSelector: b.selector.String()})
	if err != nil {
		return b.apiErr("list", "pods", err)
	}
	mode := procmark.AllSessions
	if b.gatewayID != "" {
		mode = procmark.PrefixMode(b.gatewayID + ".")
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 4)
	)
	for i := range list.Items {
		pod := &list.Items[i]
		id, _ := b.instanceID(pod)
		if id == "" || pod.Name == b.selfPod {
			continue
		}
		t, err := parseID(instanceOf(pod.Name, id))
		if err != nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			procs, err := b.runKill(ctx, t.key(), []string{mode})
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("sweep %q: %w", t.pod, err))
				mu.Unlock()
				return
			}
			b.logSwept(t.pod, procs)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (b *Backend) logSwept(name string, procs []procmark.Ended) {
	if len(procs) == 0 {
		return
	}
	sessionIDs, pids := procmark.Summary(procs)
	b.log.Info("kubernetes: sweep ended shells left by an earlier run",
		"instance", name, "sessions", sessionIDs, "processes", pids)
}

// limitWriter keeps the first n bytes and discards the rest.
type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if k := min(len(p), l.n); k > 0 {
		l.n -= k
		l.w.Write(p[:k])
	}
	return len(p), nil
}
