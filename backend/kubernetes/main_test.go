package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/remotecommand"
)

// The cluster tests run against a real cluster: KUBECONFIG, else the test
// cluster of scripts/k8s-cluster.sh (TERMGATE_K8S_DIR, default
// /var/cache/termgate-k8s), which has the image localhost/busybox:1. Each
// run works in a namespace of its own, deleted at the end. Without a
// cluster they skip, unless TERMGATE_REQUIRE_KUBERNETES=1.

const testImage = "localhost/busybox:1"

var (
	cluster    *Loaded // nil when clusterErr is set
	clusterCS  kubernetes.Interface
	clusterErr error
	testNS     string
	runLabel   string // every pod of this run carries it (KEY=VALUE)
)

func TestMain(m *testing.M) {
	id := randomHex(4)
	testNS, runLabel = "tgtest-"+id, "termgate.test/run="+id
	clusterErr = prepareCluster()
	code := m.Run()
	if clusterErr == nil {
		// The namespace's pods go with it, in the background.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := clusterCS.CoreV1().Namespaces().Delete(ctx, testNS, metav1.DeleteOptions{}); err != nil {
			fmt.Fprintf(os.Stderr, "delete the test namespace %s: %v (the next run deletes it after an hour)\n", testNS, err)
		}
		cancel()
		if g := gatewayBinDir; g != "" {
			_ = os.RemoveAll(g)
		}
		if h := holderBinDir; h != "" {
			_ = os.RemoveAll(h)
		}
	}
	if code == 0 {
		// The WebSocket executor's heartbeat ends at its next ping (every
		// 5 s) after a stream the client closed: wait up to 8 s for it.
		deadline := time.Now().Add(8 * time.Second)
		for {
			err := goleak.Find(goleakOptions()...)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
				code = 1
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	os.Exit(code)
}

// goleakOptions ignores client-go's process-wide goroutines, which live as
// long as the process by design (klog's flush daemon, the shared
// transport's connections and certificate reloader).
func goleakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/flowcontrol.(*throttle).Wait"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
		// A kubeconfig with client certificate files gets a certificate
		// reloader in the shared transport cache, for the process's life.
		goleak.IgnoreAnyFunction("k8s.io/client-go/transport.(*dynamicClientCert).run"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/transport.(*dynamicClientCert).processNextWorkItem"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*delayingType[...]).waitingLoop"),
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.PollImmediateUntil"),
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/util/wait.PollImmediateUntilWithContext.poller.func1.1"),
		// A cancelled WebSocket exec's ping loop ends at its next ping
		// (client-go's pingPeriod), on the closed connection.
		goleak.IgnoreTopFunction("k8s.io/client-go/tools/remotecommand.(*heartbeat).start"),
	}
}

func kubeconfigPath() string {
	if k := os.Getenv("KUBECONFIG"); k != "" {
		return k
	}
	dir := os.Getenv("TERMGATE_K8S_DIR")
	if dir == "" {
		dir = "/var/cache/termgate-k8s"
	}
	return filepath.Join(dir, "etc", "admin.kubeconfig")
}

func prepareCluster() error {
	path := kubeconfigPath()
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no kubeconfig (bring the test cluster up: scripts/k8s-cluster.sh up): %w", err)
	}
	loaded, err := LoadConfig(path)
	if err != nil {
		return err
	}
	b, err := New(Config{REST: loaded.REST, Namespace: "default"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Ping(ctx); err != nil {
		return err
	}
	deleteStaleNamespaces(ctx, b.cs)
	_, err = b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: testNS, Labels: map[string]string{testNSLabel: "1"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", testNS, err)
	}
	// The service account controller makes "default" in a new namespace;
	// pods cannot be created before it exists.
	for {
		_, err := b.cs.CoreV1().ServiceAccounts(testNS).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("namespace %s: no default service account within 10s: %w", testNS, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cluster, clusterCS = loaded, b.cs
	return nil
}

// testNSLabel marks the runs' namespaces.
const testNSLabel = "termgate.test/namespace"

// deleteStaleNamespaces deletes the namespaces of runs that ended over an
// hour ago without deleting theirs (killed, or the API server away at the
// end), so that a long-lived test cluster does not fill up.
func deleteStaleNamespaces(ctx context.Context, cs kubernetes.Interface) {
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: testNSLabel})
	if err != nil {
		return
	}
	for _, ns := range list.Items {
		if time.Since(ns.CreationTimestamp.Time) > time.Hour && ns.DeletionTimestamp == nil {
			_ = cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		}
	}
}

func needCluster(t *testing.T) {
	t.Helper()
	if clusterErr == nil {
		return
	}
	if os.Getenv("TERMGATE_REQUIRE_KUBERNETES") == "1" {
		t.Fatalf("TERMGATE_REQUIRE_KUBERNETES=1 but the Kubernetes test cluster is unusable: %v", clusterErr)
	}
	t.Skipf("no usable Kubernetes cluster (scripts/k8s-cluster.sh up; TERMGATE_REQUIRE_KUBERNETES=1 fails instead): %v", clusterErr)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// clusterBackend is a Backend for the run's namespace and label.
func clusterBackend(t *testing.T, cfg Config) *Backend {
	t.Helper()
	needCluster(t)
	cfg.REST, cfg.Namespace = cluster.REST, testNS
	if cfg.Label == "" {
		cfg.Label = runLabel
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runPod creates a busybox pod (deleted at cleanup) and waits until it
// runs. mutate may change it first.
func runPod(t *testing.T, mutate func(*corev1.Pod)) string {
	t.Helper()
	needCluster(t)
	key, val, _ := strings.Cut(runLabel, "=")
	name := "tgpod-" + randomHex(4)
	grace := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{key: val}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  new(bool),
			Containers: []corev1.Container{{
				Name: "shell", Image: testImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "100000"},
			}},
		},
	}
	if mutate != nil {
		mutate(pod)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := clusterCS.CoreV1().Pods(testNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	t.Cleanup(func() { deletePod(t, name, false) })
	for {
		p, err := clusterCS.CoreV1().Pods(testNS).Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			return name
		}
		if ctx.Err() != nil {
			t.Fatalf("pod %s not running within 60s: %v %+v", name, err, p.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deletePod deletes a pod at once; wait waits until it is gone.
func deletePod(t *testing.T, name string, wait bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	grace := int64(0)
	err := clusterCS.CoreV1().Pods(testNS).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete pod %s: %v", name, err)
		return
	}
	for wait {
		_, err := clusterCS.CoreV1().Pods(testNS).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("pod %s still there 60s after its deletion", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// podSh runs a shell script in the pod's first container (no TTY) and
// returns its output.
func podSh(t *testing.T, pod, script string) string {
	t.Helper()
	b := clusterBackend(t, Config{})
	ex, err := b.executor(target{pod: pod, container: "shell"}, []string{"sh", "-c", script}, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}); err != nil {
		t.Fatalf("exec %q in %s: %v (%s)", script, pod, err, errOut.String())
	}
	return out.String()
}

// markedProcesses lists the processes in the pod whose environment holds
// TERMGATE_SESSION, as "PID ARGS".
func markedProcesses(t *testing.T, pod string) []string {
	t.Helper()
	out := podSh(t, pod, `for d in /proc/[0-9]*; do
		if tr '\0' '\n' <$d/environ 2>/dev/null | grep -q '^TERMGATE_SESSION='; then
			echo "${d#/proc/} $(tr '\0' ' ' <$d/cmdline)"
		fi
	done`)
	var ps []string
	for line := range strings.Lines(out) {
		if l := strings.TrimSpace(line); l != "" {
			ps = append(ps, l)
		}
	}
	return ps
}
