package kubernetes

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/termgate/termgate/internal/termtest"
)

// The gateway deployed on the cluster from deploy/kubernetes/, as a user
// deploys it (its image built and imported by deploy/kubernetes/image.sh,
// its Secret made as the README says), with exactly the manifests' RBAC.
//
// What the test cluster lacks is patched in, and nothing else: it runs no
// kube-proxy and no DNS, and its API server listens on 127.0.0.1 only, so
// the gateway pods reach it through a TCP relay on the pod bridge (at the
// name kubernetes.default.svc, which the API server's certificate holds,
// by a hostAliases entry), where the host gets an address for the test
// (hostOnBridge); the test reaches each replica by its pod IP (no Service
// routing without kube-proxy); --instance-label becomes the run's label.

const deployDir = "../../deploy/kubernetes"

// probeTokenLine is the public, powerless token the manifests' readiness
// probe sends (README, Kubernetes).
const probeTokenLine = "termgate-readyz-probe-token-not-a-secret-0000 readyz-probe instances=_none read-only\n"

var (
	imageOnce sync.Once
	imageErr  error
)

func buildImage(t *testing.T) {
	t.Helper()
	imageOnce.Do(func() {
		if err := exec.Command("docker", "info").Run(); err != nil {
			imageErr = fmt.Errorf("deploy/kubernetes/image.sh needs Docker to build the image: %w", err)
			return
		}
		out, err := exec.Command("bash", filepath.Join(deployDir, "image.sh")).CombinedOutput()
		if err != nil {
			imageErr = fmt.Errorf("deploy/kubernetes/image.sh: %w: %s", err, out)
		}
	})
	if imageErr != nil {
		if os.Getenv("TERMGATE_REQUIRE_KUBERNETES") != "1" && strings.Contains(imageErr.Error(), "needs Docker") {
			t.Skip(imageErr)
		}
		t.Fatal(imageErr)
	}
}

// apiRelay forwards TCP connections from the pod bridge's address to the
// API server on 127.0.0.1:6443 until closed.
type apiRelay struct {
	l     net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// hostOnBridge is the address the test gives the host on the pod bridge
// (outside host-local's first allocations): the test cluster's bridge has
// none (isGateway false), so neither the kubelet's probes nor the test nor
// the pods' way to the API server would reach across it otherwise.
const hostOnBridge = "10.88.0.254"

func startAPIRelay(t *testing.T) (ip string, port int) {
	t.Helper()
	ip = hostOnBridge
	if out, err := exec.Command("ip", "addr", "add", ip+"/24", "dev", "tgk8s0").CombinedOutput(); err != nil {
		if !strings.Contains(string(out), "File exists") {
			t.Fatalf("give the host %s on the pod bridge tgk8s0: %v: %s", ip, err, out)
		}
	} else {
		t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", ip+"/24", "dev", "tgk8s0").Run() })
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	r := &apiRelay{l: l, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.serve)
	t.Cleanup(r.close)
	return ip, l.Addr().(*net.TCPAddr).Port
}

func (r *apiRelay) serve() {
	for {
		c, err := r.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", "127.0.0.1:6443")
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns[c], r.conns[up] = struct{}{}, struct{}{}
		r.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		r.wg.Go(func() { pipe(up, c) })
		r.wg.Go(func() { pipe(c, up) })
	}
}

func (r *apiRelay) close() {
	r.l.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// deployState makes the Secret "termgate" as the README does, returning
// the host key and a client key in authorized_keys, and the token.
func deployState(t *testing.T) (hostKey gossh.PublicKey, client gossh.Signer) {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := gossh.MarshalPrivateKey(hostPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	hostSigner, _ := gossh.NewSignerFromKey(hostPriv)
	_, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	client, _ = gossh.NewSignerFromKey(clientPriv)
	cookie := make([]byte, 32)
	_, _ = rand.Read(cookie)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "termgate"},
		Data: map[string][]byte{
			"ssh_host_ed25519_key": pem.EncodeToMemory(block),
			"authorized_keys":      gossh.MarshalAuthorizedKey(client.PublicKey()),
			"api_token":            []byte(randomHex(24) + " admin\n" + probeTokenLine),
			"cookie_key":           cookie,
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := clusterCS.CoreV1().Secrets(testNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the Secret: %v", err)
	}
	return hostSigner.PublicKey(), client
}

// manifests decodes deploy/kubernetes/*.yaml (without kustomization.yaml).
func manifests(t *testing.T) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	for _, f := range []string{"rbac.yaml", "signin-state.yaml", "service.yaml", "deployment.yaml"} {
		data, err := os.ReadFile(filepath.Join(deployDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for doc := range strings.SplitSeq(string(data), "\n---\n") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			objs = append(objs, obj)
		}
	}
	return objs
}

// deploy creates the manifests' objects in the run's namespace, the
// Deployment patched for the test cluster (see above).
func deploy(t *testing.T, relayIP string, relayPort int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var err error
	for _, obj := range manifests(t) {
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			_, err = clusterCS.CoreV1().ServiceAccounts(testNS).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = clusterCS.RbacV1().Roles(testNS).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = clusterCS.RbacV1().RoleBindings(testNS).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = clusterCS.CoreV1().Services(testNS).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Secret:
			_, err = clusterCS.CoreV1().Secrets(testNS).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			spec := &o.Spec.Template.Spec
			c := &spec.Containers[0]
			for i, a := range c.Args {
				if strings.HasPrefix(a, "--instance-label=") {
					c.Args[i] = "--instance-label=" + runLabel
				}
			}
			c.Env = append(c.Env,
				corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "kubernetes.default.svc"},
				corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: fmt.Sprint(relayPort)})
			spec.HostAliases = append(spec.HostAliases, corev1.HostAlias{IP: relayIP, Hostnames: []string{"kubernetes.default.svc"}})
			_, err = clusterCS.AppsV1().Deployments(testNS).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("deploy/kubernetes has a %T the test does not create", obj)
		}
		if err != nil {
			t.Fatalf("create %T: %v", obj, err)
		}
	}
}

// readyGateways waits until n gateway pods are ready (their readiness
// probe on /readyz passes) and returns them, by name.
func readyGateways(t *testing.T, n int, not ...string) map[string]string {
	t.Helper()
	// Generous: right after apiserver_test.go restarted the API server,
	// the scheduler and kubelet of a loaded CI machine took 90 s to start
	// the second replica.
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	for {
		list, err := clusterCS.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=termgate"})
		ready := map[string]string{}
		if err == nil {
			for _, p := range list.Items {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil && !contains(not, p.Name) {
						ready[p.Name] = p.Status.PodIP
					}
				}
			}
		}
		if len(ready) >= n {
			return ready
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d gateway pods ready within 180s (%v):\n%s", len(ready), n, err, gatewayLogs(t))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gatewayLogs returns every gateway pod's log.
func gatewayLogs(t *testing.T) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := clusterCS.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=termgate"})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range list.Items {
		raw, err := clusterCS.CoreV1().Pods(testNS).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		fmt.Fprintf(&b, "--- %s (%s) %v\n%s\n", p.Name, p.Status.Phase, err, raw)
	}
	return b.String()
}

// sshTo attaches to instance through the gateway at addr.
func sshTo(t *testing.T, addr, instance string, hostKey gossh.PublicKey, client gossh.Signer) *term {
	t.Helper()
	c, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{
		User: instance, Auth: []gossh.AuthMethod{gossh.PublicKeys(client)},
		HostKeyCallback: gossh.FixedHostKey(hostKey), Timeout: waitFor,
	})
	if err != nil {
		t.Fatalf("ssh %s@%s: %v", instance, addr, err)
	}
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, c: c, out: termtest.NewStream(), errOut: termtest.NewStream(), ended: make(chan struct{})}
	s.Stdout, s.Stderr = tm.out, tm.errOut
	if tm.stdin, err = s.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	go func() {
		tm.err = s.Wait()
		close(tm.ended)
	}()
	t.Cleanup(tm.close)
	return tm
}

// Two replicas deployed from deploy/kubernetes/ serve one shell (a client
// on each sees the other's typing); deleting one replica loses no shell:
// the other's client goes on in it, and the replica that replaces it
// returns a client to it, with the replay.
func TestDeployedReplicasServeOneShell(t *testing.T) {
	t.Parallel()
	needCluster(t)
	buildImage(t)
	hostKey, client := deployState(t)
	pod := runPod(t, nil) // the bridge exists once a pod does
	ip, port := startAPIRelay(t)
	deploy(t, ip, port)
	gws := readyGateways(t, 2)
	var names []string
	for name := range gws {
		names = append(names, name)
	}

	a := sshTo(t, net.JoinHostPort(gws[names[0]], "2222"), pod, hostKey, client)
	pid := a.pid()
	b := sshTo(t, net.JoinHostPort(gws[names[1]], "2222"), pod, hostKey, client)
	if got := b.pid(); got != pid {
		t.Fatalf("the replicas serve different shells (PIDs %d and %d)", pid, got)
	}
	a.send("echo from-a-$((40+2))")
	b.expect("from-a-42")
	b.send("echo from-b-$((40+3))")
	a.expect("from-b-43")

	// One replica goes (as in a rolling update: SIGTERM, grace period).
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Its log, followed from before the deletion: the pod's log is gone
	// with it, and it says why a shutdown took long.
	logs := &termtest.SyncBuffer{}
	if rc, err := clusterCS.CoreV1().Pods(testNS).GetLogs(names[0], &corev1.PodLogOptions{Follow: true, SinceSeconds: new(int64(5))}).Stream(ctx); err == nil {
		go func() { _, _ = io.Copy(logs, rc); _ = rc.Close() }()
	}
	if err := clusterCS.CoreV1().Pods(testNS).Delete(ctx, names[0], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.ended:
	case <-time.After(45 * time.Second): // the pod's grace (15 s) and a loaded kubelet
		t.Fatalf("the deleted replica's SSH client did not end within 45s; the replica's last log:\n%s", logs.String())
	}
	b.send("echo still-b-$((40+4))")
	b.expect("still-b-44")
	if got := b.pid(); got != pid {
		t.Errorf("after a replica's deletion the shell is PID %d, want %d", got, pid)
	}

	// Its replacement serves the same shell, with the replay.
	gws = readyGateways(t, 2, names[0])
	for name, podIP := range gws {
		if name == names[1] {
			continue
		}
		c := sshTo(t, net.JoinHostPort(podIP, "2222"), pod, hostKey, client)
		c.expect("still-b-44")
		if got := c.pid(); got != pid {
			t.Errorf("the new replica %s serves PID %d, want %d", name, got, pid)
		}
	}
	if logs := gatewayLogs(t); strings.Contains(strings.ToLower(logs), "forbidden") || strings.Contains(logs, "RBAC") {
		t.Errorf("the gateways met an RBAC refusal with the manifests' Role:\n%s", logs)
	}
	if t.Failed() {
		t.Logf("gateway logs:\n%s", gatewayLogs(t))
	}
}
