package kubernetes

import (
	"context"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/sessions"
)

// Durable sessions, Kubernetes side: the API has no file upload, so the
// holder goes in over an exec (exechost.UploadByExec, which needs /bin/sh,
// as the backend does anyway), and Exists is an exec too.

// Upload copies data into dir as name over an exec (exechost.UploadByExec).
func (p pods) Upload(ctx context.Context, inst sessions.Instance, dir, name string, data []byte) error {
	return exechost.UploadByExec(ctx, p, inst, dir, name, data)
}

// Exists reports which of paths exist in the container (one exec:
// exechost.ExistsByExec). A container without /bin/sh can host no holder:
// none.
func (p pods) Exists(ctx context.Context, inst sessions.Instance, paths []string) ([]bool, error) {
	return exechost.ExistsByExec(ctx, p, inst, paths, noShell)
}

// noShell: the exec failed because the container has no /bin/sh to run.
// The runtime says so only in the error's text (the API server passes it
// on as the stream's failure, not as a status).
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
