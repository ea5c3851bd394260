package kubernetes

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/termgate/termgate/sessions"
)

// These unit tests drive Watch's informer logic with client-go's fake
// clientset; the real cluster's tests (cluster_test.go) cover the rest.

func fakePod(name, uid, cid string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid), Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}, {Name: "side"}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "main", ContainerID: cid, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "side", ContainerID: cid + "-side", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			},
		},
	}
}

func fakeBackend(t *testing.T, label string, objs ...*corev1.Pod) (*Backend, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset()
	for _, p := range objs {
		if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := New(Config{REST: &rest.Config{Host: "https://fake"}, Client: cs, Namespace: "ns", Label: label})
	if err != nil {
		t.Fatal(err)
	}
	return b, cs
}

// watching runs Watch until the test ends and returns its events.
func watching(t *testing.T, b *Backend) <-chan sessions.InstanceEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	evs := make(chan sessions.InstanceEvent, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := b.Watch(ctx, func(e sessions.InstanceEvent) { evs <- e }); err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return evs
}

func nextEvent(t *testing.T, evs <-chan sessions.InstanceEvent) sessions.InstanceEvent {
	t.Helper()
	select {
	case e := <-evs:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no instance event within 10s")
	}
	return sessions.InstanceEvent{}
}

func noEvent(t *testing.T, evs <-chan sessions.InstanceEvent) {
	t.Helper()
	select {
	case e := <-evs:
		t.Fatalf("unexpected event %+v", e)
	case <-time.After(300 * time.Millisecond):
	}
}

// update replaces the pod and gives the informer time to see it.
func update(t *testing.T, cs *fake.Clientset, p *corev1.Pod) {
	t.Helper()
	if _, err := cs.CoreV1().Pods("ns").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func lookup(t *testing.T, b *Backend, name string) sessions.Instance {
	t.Helper()
	inst, err := b.Lookup(context.Background(), name)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", name, err)
	}
	return inst
}

// waitSynced waits until the informer has listed (a change made before the
// list would be seen as the initial state, not as a change).
func waitSynced(t *testing.T, cs *fake.Clientset) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, a := range cs.Actions() {
			if a.GetVerb() == "watch" {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the informer did not start watching within 10s")
}

func TestWatchRestartedContainerIsGone(t *testing.T) {
	b, cs := fakeBackend(t, "", fakePod("web", "u1", "containerd://a", nil))
	inst := lookup(t, b, "web")
	evs := watching(t, b)
	waitSynced(t, cs)

	// A status change of the other container is not this instance's.
	p := fakePod("web", "u1", "containerd://a", nil)
	p.Status.ContainerStatuses[1].RestartCount = 1
	p.Status.ContainerStatuses[1].ContainerID = "containerd://other"
	update(t, cs, p)
	noEvent(t, evs)

	p = fakePod("web", "u1", "containerd://b", nil)
	p.Status.ContainerStatuses[0].RestartCount = 1
	update(t, cs, p)
	if e := nextEvent(t, evs); !e.Gone || e.Instance != inst {
		t.Fatalf("after a restart: %+v, want Gone for %+v", e, inst)
	}
	if got := lookup(t, b, "web"); got.ID == inst.ID {
		t.Errorf("the restarted container kept the instance ID %q: its session would not start afresh", got.ID)
	}
}

func TestWatchDeletionIsGoneWhenItStarts(t *testing.T) {
	b, cs := fakeBackend(t, "", fakePod("web", "u1", "containerd://a", nil))
	inst := lookup(t, b, "web")
	evs := watching(t, b)
	waitSynced(t, cs)

	p := fakePod("web", "u1", "containerd://a", nil)
	now := metav1.Now()
	p.DeletionTimestamp = &now
	update(t, cs, p)
	if e := nextEvent(t, evs); !e.Gone || e.Instance != inst {
		t.Fatalf("after the deletion started: %+v, want Gone for %+v", e, inst)
	}
	if _, err := b.Lookup(context.Background(), "web"); err == nil {
		t.Error("Lookup found a pod being deleted")
	}
	// The deletion itself reports nothing more: the instance is gone already.
	if err := cs.CoreV1().Pods("ns").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	noEvent(t, evs)
}

func TestWatchDeletedPodIsGone(t *testing.T) {
	b, cs := fakeBackend(t, "", fakePod("web", "u1", "containerd://a", nil), fakePod("db", "u2", "containerd://c", nil))
	inst := lookup(t, b, "web")
	evs := watching(t, b)
	waitSynced(t, cs)
	if err := cs.CoreV1().Pods("ns").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, evs); !e.Gone || e.Instance != inst {
		t.Fatalf("after the delete: %+v, want Gone for %+v", e, inst)
	}
	noEvent(t, evs)
}

func TestWatchEvictedPodIsGone(t *testing.T) {
	b, cs := fakeBackend(t, "", fakePod("web", "u1", "containerd://a", nil))
	inst := lookup(t, b, "web")
	evs := watching(t, b)
	waitSynced(t, cs)
	p := fakePod("web", "u1", "containerd://a", nil)
	p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted"
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}
	update(t, cs, p)
	if e := nextEvent(t, evs); !e.Gone || e.Instance != inst {
		t.Fatalf("after the eviction: %+v, want Gone for %+v", e, inst)
	}
}

func TestWatchLabelRemovedIsGone(t *testing.T) {
	b, cs := fakeBackend(t, "termgate=yes", fakePod("web", "u1", "containerd://a", map[string]string{"termgate": "yes"}))
	inst := lookup(t, b, "web")
	evs := watching(t, b)
	waitSynced(t, cs)
	update(t, cs, fakePod("web", "u1", "containerd://a", map[string]string{"termgate": "no"}))
	if e := nextEvent(t, evs); !e.Gone || e.Instance != inst {
		t.Fatalf("after the label changed: %+v, want Gone for %+v", e, inst)
	}
	if _, err := b.Lookup(context.Background(), "web"); err == nil {
		t.Error("Lookup found a pod without the instance label")
	}
}

func TestLookupPicksTheAnnotatedContainer(t *testing.T) {
	p := fakePod("web", "u1", "containerd://a", nil)
	p.Annotations = map[string]string{ContainerAnnotation: "side"}
	b, _ := fakeBackend(t, "", p)
	inst := lookup(t, b, "web")
	if want := "u1/side/containerd://a-side"; inst.ID != want {
		t.Errorf("instance ID %q, want %q", inst.ID, want)
	}
	p2 := fakePod("db", "u2", "containerd://c", nil)
	p2.Annotations = map[string]string{ContainerAnnotation: "nope"}
	b2, _ := fakeBackend(t, "", p2)
	if _, err := b2.Lookup(context.Background(), "db"); err == nil {
		t.Error("Lookup accepted a pod whose annotation names no container")
	}
}
