package kubernetes

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/termgate/termgate/sessions"
)

// Watch reports every instance that ends (Gone) until ctx is done (it then
// returns nil): a pod deleted (from the moment its deletion starts),
// evicted or finished, its shell container ended or restarted (a restarted
// container is a new instance: the next attach gets a fresh session), or
// its instance label removed. Pods cannot be renamed. A pod informer lists
// and watches the namespace's instances; client-go's reflector relists and
// rewatches by itself when the API server goes away, and a pod deleted
// meanwhile is reported after the relist. ev runs on Watch's goroutine.
func (b *Backend) Watch(ctx context.Context, ev func(sessions.InstanceEvent)) error {
	factory := informers.NewSharedInformerFactoryWithOptions(b.cs, 0,
		informers.WithNamespace(b.ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = b.selector.String() }))
	inf := factory.Core().V1().Pods().Informer()
	q := &eventQueue{ready: make(chan struct{}, 1)}
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		switch {
		case ctx.Err() != nil:
		case apierrors.IsForbidden(err):
			b.log.Error("kubernetes RBAC: the gateway may not list and watch pods: it does not see pods stop; "+
				"grant its account \"list\" and \"watch\" on \"pods\" (README, Kubernetes: the RBAC the gateway needs)",
				"namespace", b.ns, "err", err)
		default:
			b.log.Warn("kubernetes: pod watch dropped; client-go lists and watches again", "namespace", b.ns, "err", err)
		}
	}); err != nil {
		return fmt.Errorf("kubernetes pod informer: %w", err)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) { q.push(b.changes(podOf(old), podOf(cur))) },
		DeleteFunc: func(obj any) { q.push(b.changes(podOf(obj), nil)) },
	}); err != nil {
		return fmt.Errorf("kubernetes pod informer: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	// Events queue up meanwhile; the tests need to know when the first
	// list is in (a pod deleted before it is no change).
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil
	}
	if b.watchSynced != nil {
		b.watchSynced()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-q.ready:
			for _, e := range q.take() {
				ev(e)
			}
		}
	}
}

// changes is what a pod's change from old to cur (nil: deleted) means for
// its instance: Gone when the instance old was is no more.
func (b *Backend) changes(old, cur *corev1.Pod) []sessions.InstanceEvent {
	if old == nil {
		return nil
	}
	oldID, _ := b.instanceID(old)
	if oldID == "" {
		return nil
	}
	curID := ""
	if cur != nil && b.hasLabel(cur.Labels) {
		curID, _ = b.instanceID(cur)
	}
	if curID == oldID {
		return nil
	}
	return []sessions.InstanceEvent{{Instance: instanceOf(old.Name, oldID), Gone: true}}
}

func instanceOf(name, id string) sessions.Instance { return sessions.Instance{Name: name, ID: id} }

// podOf unwraps what an informer hands to a handler; a deletion missed
// while the watch was down arrives as DeletedFinalStateUnknown.
func podOf(obj any) *corev1.Pod {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o
	case cache.DeletedFinalStateUnknown:
		p, _ := o.Obj.(*corev1.Pod)
		return p
	}
	return nil
}

// eventQueue hands events from the informer's goroutine to Watch's without
// ever blocking the informer.
type eventQueue struct {
	mu    sync.Mutex
	evs   []sessions.InstanceEvent
	ready chan struct{} // capacity 1: "there is something to take"
}

func (q *eventQueue) push(evs []sessions.InstanceEvent) {
	if len(evs) == 0 {
		return
	}
	q.mu.Lock()
	q.evs = append(q.evs, evs...)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *eventQueue) take() []sessions.InstanceEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.evs
	q.evs = nil
	return evs
}
