package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/sessions"
)

// ContainerAnnotation on a pod names the container the shell runs in;
// without it, the pod's first container.
const ContainerAnnotation = "termgate.dev/container"

// Config configures a Backend.
type Config struct {
	// REST is the API server's client configuration (see LoadConfig).
	REST *rest.Config
	// Client is the clientset; nil means one made from REST. Tests pass a
	// fake one for the informer logic.
	Client kubernetes.Interface
	// Namespace is where instances are looked up (required).
	Namespace string
	// Label, "KEY" or "KEY=VALUE", limits instances to the pods carrying it;
	// empty means every pod of the namespace.
	Label string
	// Shell is the default command for a session's shell; empty means bash
	// when the container has it, else sh. StartSpec.Shell overrides it.
	Shell []string
	// Logger receives what Sweep ended and Watch's troubles; nil means
	// slog.Default().
	Logger *slog.Logger
	// SelfPod is the gateway's own pod's name, which is never an instance
	// (empty: none).
	SelfPod string
	// GatewayID identifies this gateway's shells: markers become
	// GATEWAYID.SESSION and Sweep ends only markers with this prefix. Empty
	// means Sweep ends every termgate shell in the namespace's instances.
	GatewayID string

	// Durable holds sessions in a holder copied into the pod over exec,
	// so they outlive the gateway (exechost.Durable).
	exechost.Durable
}

// Backend implements sessions.Backend over the Kubernetes API. Its
// shells, kills and holders are the exec host's (exechost), over the API's
// execs (stream.go) and an upload script (upload.go).
type Backend struct {
	*exechost.Host
	rest     *rest.Config
	cs       kubernetes.Interface
	ns       string
	selector labels.Selector
	labelKey string
	labelVal string
	hasValue bool
	log      *slog.Logger
	selfPod  string

	watchSynced func() // tests: called once Watch's informer has listed
}

var (
	_ sessions.Backend = (*Backend)(nil)
	_ sessions.Adopter = (*Backend)(nil)
)

// New returns a Backend for cfg. It does not contact the API server; call
// Ping for that.
func New(cfg Config) (*Backend, error) {
	if cfg.Namespace == "" {
		return nil, errors.New("kubernetes backend: no namespace (set --kube-namespace, or a namespace in the kubeconfig's context)")
	}
	if cfg.REST == nil {
		return nil, errors.New("kubernetes backend: no API server configuration")
	}
	b := &Backend{
		rest:     cfg.REST,
		cs:       cfg.Client,
		ns:       cfg.Namespace,
		selector: labels.Everything(),
		log:      cfg.Logger,
		selfPod:  cfg.SelfPod,
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	host, err := exechost.New(pods{b}, exechost.Config{
		Name: "kubernetes", GatewayID: cfg.GatewayID, Shell: cfg.Shell, Logger: b.log,
		Durable: cfg.Durable, SweepWorkers: 4,
	})
	if err != nil {
		return nil, err
	}
	b.Host = host
	if cfg.Label != "" {
		key, val, hasValue := strings.Cut(cfg.Label, "=")
		op, vals := selection.Exists, []string(nil)
		if hasValue {
			op, vals = selection.Equals, []string{val}
		}
		req, err := labels.NewRequirement(key, op, vals)
		if err != nil {
			return nil, fmt.Errorf("instance label %q: %w (use KEY or KEY=VALUE, valid Kubernetes label syntax)", cfg.Label, err)
		}
		b.selector = labels.NewSelector().Add(*req)
		b.labelKey, b.labelVal, b.hasValue = key, val, hasValue
	}
	if b.cs == nil {
		cs, err := kubernetes.NewForConfig(cfg.REST)
		if err != nil {
			return nil, fmt.Errorf("kubernetes client: %w", err)
		}
		b.cs = cs
	}
	return b, nil
}

// Namespace is where the Backend finds its instances.
func (b *Backend) Namespace() string { return b.ns }

// ErrUnreachable is wrapped by the errors of a Backend that could not reach
// the API server.
var ErrUnreachable = errors.New("kubernetes API server unreachable")

// Ping reports whether the API server is ready (GET /readyz, which every
// authenticated client may read).
func (b *Backend) Ping(ctx context.Context) error {
	body, err := b.cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("ping kubernetes API server: %w", ctx.Err())
		}
		return fmt.Errorf("cannot reach the Kubernetes API server at %s: %w: %v (%s); check --kubeconfig/KUBECONFIG or the pod's service account",
			b.rest.Host, ErrUnreachable, err, strings.TrimSpace(string(body)))
	}
	return nil
}

// apiErr explains a failed API call: a refusal by RBAC names the verb and
// resource the gateway's account lacks.
func (b *Backend) apiErr(verb, resource string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("kubernetes RBAC: the gateway may not %s %s in namespace %q: grant its account %q on %q "+
			"(README, Kubernetes: the RBAC the gateway needs): %w", verb, resource, b.ns, verb, resource, err)
	}
	if apierrors.IsUnauthorized(err) {
		return fmt.Errorf("kubernetes: the API server does not accept the gateway's credentials (%s %s): %w", verb, resource, err)
	}
	return fmt.Errorf("kubernetes: %s %s: %w", verb, resource, err)
}

// Lookup resolves a running pod by its name. Missing, pending, finished or
// terminating pods, pods whose shell container is not running, pods without
// the configured label and the gateway's own pod are refused with an error
// wrapping sessions.ErrNotFound.
func (b *Backend) Lookup(ctx context.Context, name string) (sessions.Instance, error) {
	if err := sessions.CheckName(name); err != nil {
		return sessions.Instance{}, err
	}
	pod, err := b.cs.CoreV1().Pods(b.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return sessions.Instance{}, fmt.Errorf("instance %q: %w", name, sessions.ErrNotFound)
		}
		return sessions.Instance{}, b.apiErr("get", "pods", err)
	}
	refuse := func(why string) (sessions.Instance, error) {
		return sessions.Instance{}, fmt.Errorf("instance %q %s: %w", name, why, sessions.ErrNotFound)
	}
	switch {
	case b.selfPod != "" && pod.Name == b.selfPod:
		return refuse("is the gateway's own pod")
	case !b.hasLabel(pod.Labels):
		return refuse("lacks the instance label")
	}
	id, why := b.instanceID(pod)
	if id == "" {
		return refuse(why)
	}
	return sessions.Instance{Name: pod.Name, ID: id}, nil
}

func (b *Backend) hasLabel(l map[string]string) bool {
	if b.labelKey == "" {
		return true
	}
	v, ok := l[b.labelKey]
	return ok && (!b.hasValue || v == b.labelVal)
}

// shellContainer is the container a pod's shells run in.
func shellContainer(pod *corev1.Pod) string {
	if c := pod.Annotations[ContainerAnnotation]; c != "" {
		return c
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return ""
}

// instanceID is "UID/CONTAINER/RUNTIME-ID" of a pod whose shell container
// runs, or "" and why not. The runtime's container ID changes when the
// container restarts, and with it the instance.
func (b *Backend) instanceID(pod *corev1.Pod) (string, string) {
	c := shellContainer(pod)
	switch {
	case pod.DeletionTimestamp != nil:
		return "", "is being deleted"
	case pod.Status.Phase != corev1.PodRunning:
		return "", fmt.Sprintf("is not running (phase %s)", pod.Status.Phase)
	case c == "":
		return "", "has no container"
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name != c {
			continue
		}
		if st.State.Running == nil || st.ContainerID == "" {
			return "", fmt.Sprintf("has its container %q not running", c)
		}
		return string(pod.UID) + "/" + c + "/" + st.ContainerID, ""
	}
	return "", fmt.Sprintf("has no container %q (annotation %s)", c, ContainerAnnotation)
}

// target is where an exec goes: the pod and container of an instance ID.
type target struct {
	pod, container, uid, containerID string
}

func parseID(inst sessions.Instance) (target, error) {
	uid, rest, ok1 := strings.Cut(inst.ID, "/")
	c, cid, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || uid == "" || c == "" || inst.Name == "" {
		return target{}, fmt.Errorf("instance %q: malformed id %q: %w", inst.Name, inst.ID, sessions.ErrNotFound)
	}
	return target{pod: inst.Name, container: c, uid: uid, containerID: cid}, nil
}
