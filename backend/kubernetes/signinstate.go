package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/termgate/termgate/oidc"
)

// SecretRecords keeps the single sign-on state's records (oidc.Records:
// remembered SSH keys, logouts, forgotten keys' tombstones) as the keys of
// one Secret's data, for replicas that share no writable directory
// (deploy/kubernetes). The records are sealed and checked by the oidc
// Store, so the Secret's readers learn which keys are remembered but
// nobody who can write it can grant anything. Load is one GET; a write
// is a GET and an UPDATE with the resourceVersion read, retried on a
// conflict (another replica wrote meanwhile), so concurrent writes lose
// nothing.
type SecretRecords struct {
	cs        kubernetes.Interface
	ns, name  string
	conflicts atomic.Int64 // writes retried (tests)
}

const (
	// secretRoom is what the records may fill: the API server refuses a
	// Secret whose values exceed corev1.MaxSecretSize (1 MiB); the rest is
	// slack for one more record of any kind.
	secretRoom = corev1.MaxSecretSize - 32<<10
	// keyRoom is where remembered keys stop (a key's record is about 750
	// bytes, more with many groups: some 1,100 keys), so that logouts and
	// tombstones (about 230 bytes each: some 700 fit in the rest) have
	// room: they are what keeps a forgotten key or a logged-out sign-in
	// out.
	keyRoom = secretRoom - 160<<10
)

// writeBackoff bounds a write's retries on conflicts: up to 12 attempts
// over about 3 s, jittered so that two replicas writing at once part.
var writeBackoff = wait.Backoff{Steps: 12, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 1, Cap: time.Second}

// NewSecretRecords keeps the records in the Secret name of namespace ns,
// through the API server of cfg (as LoadConfig found it).
func NewSecretRecords(cfg *rest.Config, ns, name string) (*SecretRecords, error) {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("sign-in state Secret %q: not a valid name: %s", name, strings.Join(errs, "; "))
	}
	if ns == "" {
		return nil, errors.New("sign-in state Secret: no namespace (the kubeconfig's context names none)")
	}
	c := rest.CopyConfig(cfg)
	// Protobuf: the Secret is read every second and may hold 1 MiB, which
	// JSON would carry as base64.
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &SecretRecords{cs: cs, ns: ns, name: name}, nil
}

// Load reads the Secret: its data are the records, its resourceVersion
// their version. A Secret not there yet holds none.
func (s *SecretRecords) Load(ctx context.Context) (map[string][]byte, string, error) {
	sec, err := s.cs.CoreV1().Secrets(s.ns).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string][]byte{}, "absent", nil
	}
	if err != nil {
		return nil, "", s.apiErr("get", err)
	}
	if sec.Data == nil {
		sec.Data = map[string][]byte{}
	}
	return sec.Data, sec.ResourceVersion, nil
}

// Put sets the record name, creating the Secret if it is not there. A
// record that would fill the Secret is refused (oidc.ErrFull): a
// remembered key at keyRoom, a logout or a tombstone at secretRoom.
func (s *SecretRecords) Put(ctx context.Context, name string, data []byte) error {
	if errs := validation.IsConfigMapKey(name); len(errs) > 0 {
		return fmt.Errorf("sign-in state: %q is not a valid Secret key: %s", name, strings.Join(errs, "; "))
	}
	room := keyRoom
	if oidc.Essential(name) {
		room = secretRoom
	}
	return s.update(ctx, true, func(d map[string][]byte) (bool, error) {
		if bytes.Equal(d[name], data) {
			return false, nil
		}
		used := 0
		for n, v := range d {
			if n != name {
				used += len(v)
			}
		}
		if used+len(data) > room {
			return false, fmt.Errorf("%w: the Secret %s/%s holds %d KiB of records and a Secret holds at most 1 MiB, so new SSH keys are no longer remembered "+
				"(a key signs in through the browser again); room comes back as keys expire (--oidc-key-ttl) or are forgotten (ssh HOST keys forget)",
				oidc.ErrFull, s.ns, s.name, used>>10)
		}
		d[name] = data
		return true, nil
	})
}

// Delete removes the records named; a missing Secret holds none.
func (s *SecretRecords) Delete(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	return s.update(ctx, false, func(d map[string][]byte) (bool, error) {
		changed := false
		for _, n := range names {
			if _, ok := d[n]; ok {
				delete(d, n)
				changed = true
			}
		}
		return changed, nil
	})
}

// update applies change to the Secret's data and writes them back with
// the resourceVersion read, again from a fresh read on a conflict (or on
// two replicas creating the Secret at once). create makes a missing
// Secret; without it a missing Secret is left so.
func (s *SecretRecords) update(ctx context.Context, create bool, change func(map[string][]byte) (bool, error)) error {
	retriable := func(err error) bool {
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			s.conflicts.Add(1)
			return true
		}
		return false
	}
	return retry.OnError(writeBackoff, retriable, func() error {
		secrets := s.cs.CoreV1().Secrets(s.ns)
		sec, err := secrets.Get(ctx, s.name, metav1.GetOptions{})
		missing := apierrors.IsNotFound(err)
		if err != nil && !missing {
			return s.apiErr("get", err)
		}
		if missing {
			if !create {
				return nil
			}
			sec = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{
					"app.kubernetes.io/name": "termgate", "app.kubernetes.io/component": "signin-state",
				}},
				Type: corev1.SecretTypeOpaque,
			}
		}
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		if ok, err := change(sec.Data); err != nil || !ok {
			return err
		}
		if missing {
			_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return s.apiErr("create", err)
			}
			return err
		}
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) {
			return s.apiErr("update", err)
		}
		return err
	})
}

// Where names the Secret and the record's key.
func (s *SecretRecords) Where(name string) string {
	if name == "" {
		return "Secret " + s.ns + "/" + s.name
	}
	return "Secret " + s.ns + "/" + s.name + ", key " + name
}

// SecretNeeded is what the gateway's account must be allowed on the
// Secret: get (every poll) and update (every write). The Secret is made
// beforehand (deploy/kubernetes has it, empty), since create cannot be
// limited to one name.
var SecretNeeded = []string{"get", "update"}

// CheckAccess asks the API server whether the gateway's account may get
// and update the Secret (SelfSubjectAccessReview) and fails naming what
// is missing; when the review itself is refused it returns nil (the
// calls will say).
func (s *SecretRecords) CheckAccess(ctx context.Context) error {
	var missing []string
	for _, verb := range SecretNeeded {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: s.ns, Verb: verb, Resource: "secrets", Name: s.name},
		}}
		got, err := s.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kubernetes: reviewing the gateway's access to the sign-in state Secret: %w", err)
		}
		if !got.Status.Allowed {
			missing = append(missing, verb)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kubernetes RBAC: the gateway's account may not %s the Secret %q in namespace %q, where the sign-in state is kept "+
			"(--signin-state-secret): grant get and update on secrets with resourceNames: [%s] (deploy/kubernetes/rbac.yaml)",
			strings.Join(missing, " or "), s.name, s.ns, s.name)
	}
	return nil
}

// apiErr says what the API server refused, and what to grant.
func (s *SecretRecords) apiErr(verb string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("kubernetes RBAC: the gateway's account may not %s the Secret %s/%s, where the sign-in state is kept: grant get and update on it "+
			"(deploy/kubernetes/rbac.yaml; create too, or make the Secret beforehand): %w", verb, s.ns, s.name, err)
	}
	return fmt.Errorf("sign-in state: %s the Secret %s/%s: %w", verb, s.ns, s.name, err)
}
