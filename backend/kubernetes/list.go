package kubernetes

import (
	"context"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/termgate/termgate/sessions"
)

// List returns the running pods that are instances (labelled when
// Config.Label is set, never the gateway's own), by name.
func (b *Backend) List(ctx context.Context) ([]sessions.Instance, error) {
	list, err := b.cs.CoreV1().Pods(b.ns).List(ctx, metav1.ListOptions{LabelSelector: b.selector.String()})
	if err != nil {
		return nil, b.apiErr("list", "pods", err)
	}
	out := make([]sessions.Instance, 0, len(list.Items))
	for i := range list.Items {
		pod := &list.Items[i]
		id, _ := b.instanceID(pod)
		if id == "" || pod.Name == b.selfPod || sessions.CheckName(pod.Name) != nil {
			continue
		}
		out = append(out, instanceOf(pod.Name, id))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
