package kubernetes

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Permission is one RBAC rule the gateway needs in its namespace.
type Permission struct {
	Verb, Resource, Subresource string
}

func (p Permission) String() string {
	r := p.Resource
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	return p.Verb + " " + r
}

// Needed is what the gateway's account must be allowed in the namespace:
// Lookup gets pods, Watch lists and watches them (so does Sweep), and a
// shell is an exec. An exec over SPDY is a POST, authorized as create on
// pods/exec; over a WebSocket it is a GET, authorized as get (and create
// as well by recent API servers).
var Needed = []Permission{
	{"get", "pods", ""},
	{"list", "pods", ""},
	{"watch", "pods", ""},
	{"create", "pods", "exec"},
}

// Recommended is what the gateway works without, at a cost: without get on
// pods/exec the API server refuses every exec's WebSocket and the executor
// falls back to SPDY, one refused request more per exec.
var Recommended = []Permission{
	{"get", "pods", "exec"},
}

// ForwardNeeded is what forwarded connections (ssh -L, -D, -W: Dial) need
// in pods where termgate's helper cannot run (Dial's fallback): the SPDY
// port-forward is a POST, authorized as create on pods/portforward.
// Without it the gateway still serves shells and forwards through the
// helper; forwards in the other pods are refused naming the permission. deploy/kubernetes also grants get,
// which a WebSocket port-forward would be authorized as.
var ForwardNeeded = []Permission{
	{"create", "pods", "portforward"},
}

// CheckAccess asks the API server whether the gateway's account holds every
// permission in Needed (SelfSubjectAccessReview, which every authenticated
// account may ask) and fails naming the missing ones; a missing one of
// Recommended or ForwardNeeded is logged. When the API server does not answer the question
// (the review itself forbidden), it returns nil: the calls themselves will
// say what is missing.
func (b *Backend) CheckAccess(ctx context.Context) error {
	if err := b.checkAccess(ctx, Needed); err != nil {
		return err
	}
	if err := b.checkAccess(ctx, Recommended); err != nil {
		b.log.Warn("kubernetes RBAC: every exec falls back from WebSocket to SPDY", "err", err)
	}
	if err := b.checkAccess(ctx, ForwardNeeded); err != nil {
		b.log.Warn("kubernetes RBAC: port forwarding (ssh -L, -D, -W) into pods will be refused where termgate's helper cannot run (read-only root, noexec)", "err", err)
	}
	return nil
}

func (b *Backend) checkAccess(ctx context.Context, perms []Permission) error {
	var missing []string
	for _, p := range perms {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: b.ns, Verb: p.Verb, Resource: p.Resource, Subresource: p.Subresource,
			},
		}}
		got, err := b.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			b.log.Debug("kubernetes: cannot review the gateway's own permissions", "err", err)
			return nil
		}
		if err != nil {
			return b.apiErr("create", "selfsubjectaccessreviews", err)
		}
		if !got.Status.Allowed {
			missing = append(missing, p.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kubernetes RBAC: the gateway's account may not %s in namespace %q: grant them with a Role and "+
			"RoleBinding (README, Kubernetes: the RBAC the gateway needs)", strings.Join(missing, ", "), b.ns)
	}
	return nil
}
