package kubernetes

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// executor returns an exec of command in the target's container, over a
// WebSocket (a GET: RBAC get on pods/exec, and create as well on recent
// API servers) and, when the server refuses the upgrade (a refusal by
// RBAC included), over SPDY (a POST: create on pods/exec), as kubectl
// does. Stderr is merged into stdout by the TTY; without one it is kept.
func (b *Backend) executor(t target, command []string, tty bool) (remotecommand.Executor, error) {
	return b.newExecutor(t, &corev1.PodExecOptions{
		Container: t.container,
		Command:   command,
		Stdin:     tty,
		Stdout:    true,
		Stderr:    !tty,
		TTY:       tty,
	})
}

// newExecutor is executor for any options (the holder's execs have stdin
// without a TTY).
func (b *Backend) newExecutor(t target, opts *corev1.PodExecOptions) (remotecommand.Executor, error) {
	req := b.cs.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(b.ns).Name(t.pod).SubResource("exec").
		VersionedParams(opts, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(b.rest, "GET", req.URL().String())
	if err != nil {
		return nil, fmt.Errorf("kubernetes exec over WebSocket: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(b.rest, "POST", req.URL())
	if err != nil {
		return nil, fmt.Errorf("kubernetes exec over SPDY: %w", err)
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// exitCode reads a finished exec's result: the command's exit status, or
// the error that ended the stream without one.
func exitCode(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var ce utilexec.CodeExitError
	if errors.As(err, &ce) {
		return ce.ExitStatus(), nil
	}
	return -1, err
}

// execErr explains an exec that could not start: a refusal by the API
// server (forbidden) means RBAC.
func (b *Backend) execErr(t target, err error) error {
	if forbidden(err) {
		return fmt.Errorf("kubernetes RBAC: the gateway may not exec in pod %q of namespace %q: grant its account \"create\" "+
			"(and \"get\", for the WebSocket) on \"pods/exec\" (README, Kubernetes: the RBAC the gateway needs): %w", t.pod, b.ns, err)
	}
	return fmt.Errorf("kubernetes exec in pod %q container %q: %w", t.pod, t.container, err)
}

// forbidden reports whether the API server refused a request (403). An
// API status says so itself (apierrors.IsForbidden; the WebSocket
// executor's refusal carries one as its UpgradeFailureError's cause, when
// the server sent one). Only an error without a status is read as text:
// SPDY's upgrade (exec, port-forward) keeps just the status's message
// ("unable to upgrade connection: pods \"x\" is forbidden: ...").
func forbidden(err error) bool {
	if err == nil {
		return false
	}
	var upgrade *httpstream.UpgradeFailureError
	if errors.As(err, &upgrade) && upgrade.Cause != nil {
		err = upgrade.Cause
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return apierrors.IsForbidden(err)
	}
	msg := err.Error()
	return strings.Contains(msg, "403") || strings.Contains(strings.ToLower(msg), "forbidden")
}
