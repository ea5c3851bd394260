package kubernetes

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestListDescribesPods: the instance list of the cluster says each pod's
// shell image, that it is up, and only its termgate.* labels (issue 22
// item 7: the page's image, status and labels, for Kubernetes as for
// Docker).
func TestListDescribesPods(t *testing.T) {
	t.Parallel()
	b := clusterBackend(t, Config{})
	name := runPod(t, func(p *corev1.Pod) {
		p.Labels["termgate.owner"] = "web-team"
		p.Labels["helm.sh/chart"] = "secret-ish-1.0"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var found bool
	for !found {
		list, err := b.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range list {
			if in.Name != name || in.Listing == nil {
				continue
			}
			found = true
			if in.Listing.Image != testImage {
				t.Errorf("image %q, want %q", in.Listing.Image, testImage)
			}
			if !strings.HasPrefix(in.Listing.Status, "Up ") {
				t.Errorf("status %q, want Up …", in.Listing.Status)
			}
			key, val, _ := strings.Cut(runLabel, "=") // termgate.test/run: shown too
			if want := map[string]string{"termgate.owner": "web-team", key: val}; !maps.Equal(in.Listing.Labels, want) {
				t.Errorf("labels %v, want only %v", in.Listing.Labels, want)
			}
		}
		if !found {
			if ctx.Err() != nil {
				t.Fatalf("pod %s not listed with a listing: %v", name, list)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// TestListingOfCountsRestarts: the status says how long the shell
// container has run and how often it restarted.
func TestListingOfCountsRestarts(t *testing.T) {
	now := time.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x", "termgate.tier": "db"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "side", Image: "envoy"}, {Name: "db", Image: "postgres:16"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "db", RestartCount: 2, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-3 * time.Hour))}}},
		}},
	}
	pod.Annotations = map[string]string{ContainerAnnotation: "db"}
	l := listingOf(pod, now)
	if l.Image != "postgres:16" || l.Status != "Up 3 hours (2 restarts)" || !maps.Equal(l.Labels, map[string]string{"termgate.tier": "db"}) {
		t.Errorf("listing %+v", l)
	}
}
