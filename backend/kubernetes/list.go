package kubernetes

import (
	"context"
	"fmt"
	"sort"
	"time"

	units "github.com/docker/go-units"
	corev1 "k8s.io/api/core/v1"

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
		inst := instanceOf(pod.Name, id)
		inst.Listing = listingOf(pod, time.Now())
		out = append(out, inst)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// listingOf is what the instance list shows of a running pod: its shell
// container's image, a status worded as docker ps words it ("Up 2 hours",
// with the restarts when there were any) and its termgate.* labels.
func listingOf(pod *corev1.Pod, now time.Time) *sessions.Listing {
	l := &sessions.Listing{Status: string(pod.Status.Phase), Labels: sessions.PublicLabels(pod.Labels)}
	c := shellContainer(pod)
	for _, spec := range pod.Spec.Containers {
		if spec.Name == c {
			l.Image = spec.Image
		}
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name != c || st.State.Running == nil {
			continue
		}
		l.Status = "Up " + units.HumanDuration(now.Sub(st.State.Running.StartedAt.Time))
		if st.RestartCount > 0 {
			l.Status += fmt.Sprintf(" (%d restarts)", st.RestartCount)
		}
	}
	return l
}
