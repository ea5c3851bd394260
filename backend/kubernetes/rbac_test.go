package kubernetes

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/termgate/termgate/internal/termtest"
	"github.com/termgate/termgate/sessions"
)

// The RBAC tests run the backend and the gateway as service accounts of
// the run's namespace that hold only some of the permissions in Needed.

// podRules grants verbs on pods and, when execVerbs are given, on pods/exec.
func podRules(podVerbs []string, execVerbs ...string) []rbacv1.PolicyRule {
	var r []rbacv1.PolicyRule
	if len(podVerbs) > 0 {
		r = append(r, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: podVerbs})
	}
	if len(execVerbs) > 0 {
		r = append(r, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: execVerbs})
	}
	return r
}

// rulesFor grants verbs on one resource (pods/portforward, say).
func rulesFor(resource string, verbs ...string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{resource}, Verbs: verbs}}
}

// serviceAccount makes a service account bound to a Role with rules and
// returns a client configuration with a token of it.
func serviceAccount(t *testing.T, rules []rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name := "tg-limited-" + randomHex(3)
	if _, err := clusterCS.CoreV1().ServiceAccounts(testNS).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusterCS.RbacV1().Roles(testNS).Create(ctx,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusterCS.RbacV1().RoleBindings(testNS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: testNS}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	exp := int64(3600)
	tok, err := clusterCS.CoreV1().ServiceAccounts(testNS).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{
		Host:            cluster.REST.Host,
		BearerToken:     tok.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: cluster.REST.CAFile, CAData: cluster.REST.CAData},
	}
	return tune(cfg)
}

// limitedBackend is a Backend of the run's namespace as a service account
// with rules, its log in logs. The RBAC authorizer learns of a new
// binding from its informer: it waits until the account may do what the
// rules allow first.
func limitedBackend(t *testing.T, rules []rbacv1.PolicyRule, logs io.Writer) *Backend {
	t.Helper()
	cfg := serviceAccount(t, rules)
	if logs == nil {
		logs = io.Discard
	}
	b, err := New(Config{REST: cfg, Namespace: testNS, Label: runLabel,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) > 0 {
		first := rules[0]
		p := Permission{Verb: first.Verbs[0], Resource: "pods"}
		if first.Resources[0] == "pods/exec" {
			p.Subresource = "exec"
		}
		waitAllowed(t, b, p)
	}
	return b
}

func waitAllowed(t *testing.T, b *Backend, p Permission) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := b.checkAccess(context.Background(), []Permission{p})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service account never got %s: %v", p, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestRBACErrorsNameTheVerbAndResource(t *testing.T) {
	t.Parallel()
	pod := runPod(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// No permission at all: Lookup, List, Sweep and the start-up check say
	// what is missing.
	none := limitedBackend(t, nil, nil)
	for what, err := range map[string]error{
		"Lookup": func() error { _, err := none.Lookup(ctx, pod); return err }(),
		"List":   func() error { _, err := none.List(ctx); return err }(),
		"Sweep":  none.Sweep(ctx),
	} {
		want := `"get" on "pods"`
		if what != "Lookup" {
			want = `"list" on "pods"`
		}
		if err == nil || !strings.Contains(err.Error(), "RBAC") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s without permissions: %v, want an RBAC error naming %s", what, err, want)
		}
	}
	err := none.CheckAccess(ctx)
	if err == nil || !strings.Contains(err.Error(), "may not get pods, list pods, watch pods, create pods/exec in") {
		t.Errorf("CheckAccess without permissions: %v, want every missing permission named", err)
	}

	// Pods but no exec: the shell cannot start, and the error says why.
	noExec := limitedBackend(t, podRules([]string{"get", "list", "watch"}), nil)
	inst, err := noExec.Lookup(ctx, pod)
	if err != nil {
		t.Fatalf("Lookup with get on pods: %v", err)
	}
	p, err := noExec.Start(ctx, inst, sessions.StartSpec{SessionID: "rbac1"})
	if err == nil {
		_ = p.Kill(ctx)
		t.Fatal("Start without pods/exec succeeded")
	}
	if !strings.Contains(err.Error(), "RBAC") || !strings.Contains(err.Error(), `"pods/exec"`) {
		t.Errorf("Start without pods/exec: %v, want an RBAC error naming pods/exec", err)
	}
	if err := noExec.CheckAccess(ctx); err == nil || !strings.Contains(err.Error(), "may not create pods/exec in") {
		t.Errorf("CheckAccess without pods/exec: %v, want create on pods/exec named", err)
	}

	// Get but no list or watch: Watch logs what to grant.
	var logs termtest.SyncBuffer
	noWatch := limitedBackend(t, podRules([]string{"get"}), &logs)
	wctx, wcancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- noWatch.Watch(wctx, func(sessions.InstanceEvent) {}) }()
	deadline := time.Now().Add(waitFor)
	for !strings.Contains(logs.String(), `may not list and watch pods`) {
		if time.Now().After(deadline) {
			t.Errorf("Watch without list and watch logged no RBAC error within %s:\n%s", waitFor, logs.String())
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	wcancel()
	if err := <-done; err != nil {
		t.Errorf("Watch: %v", err)
	}
}

// TestLeastRBACIsEnough runs sessions as accounts holding Needed, with and
// without Recommended (README, Kubernetes: the RBAC the gateway needs).
func TestLeastRBACIsEnough(t *testing.T) {
	pod := runPod(t, nil)
	for _, execVerbs := range [][]string{{"create", "get"}, {"create"}} {
		t.Run(strings.Join(execVerbs, "+"), func(t *testing.T) {
			var logs termtest.SyncBuffer
			b := limitedBackend(t, podRules([]string{"get", "list", "watch"}, execVerbs...), &logs)
			for _, v := range execVerbs {
				waitAllowed(t, b, Permission{Verb: v, Resource: "pods", Subresource: "exec"})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := b.CheckAccess(ctx); err != nil {
				t.Fatalf("CheckAccess: %v", err)
			}
			warned := strings.Contains(logs.String(), "falls back from WebSocket to SPDY")
			if want := len(execVerbs) == 1; warned != want {
				t.Errorf("CheckAccess warned about the SPDY fallback: %v, want %v; log:\n%s", warned, want, logs.String())
			}
			s := startShell(t, b, pod, sessions.StartSpec{})
			s.send("sleep 2345 & echo least-$((40+2))")
			s.expect("least-42")
			if err := s.p.Kill(ctx); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			if ps := strings.Join(markedProcesses(t, pod), "\n"); strings.Contains(ps, "sleep 2345") {
				t.Errorf("Kill left the job:\n%s", ps)
			}
			if err := b.Sweep(ctx); err != nil {
				t.Errorf("Sweep: %v", err)
			}
		})
	}
}

// TestGatewayRefusesToStartWithoutRBAC starts the gateway with a
// kubeconfig of an account that may not exec: it exits at once, saying
// which permissions are missing.
func TestGatewayRefusesToStartWithoutRBAC(t *testing.T) {
	t.Parallel()
	cfg := serviceAccount(t, podRules([]string{"get", "list", "watch"}))
	bin := buildGateway(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	caFile := cfg.CAFile
	if caFile == "" {
		caFile = filepath.Join(dir, "ca.crt")
		if err := os.WriteFile(caFile, cfg.CAData, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	conf := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + cfg.Host +
		"\n    certificate-authority: " + caFile + "\nusers:\n- name: u\n  user:\n    token: " + cfg.BearerToken +
		"\ncontexts:\n- name: c\n  context: {cluster: c, user: u, namespace: " + testNS + "}\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--backend", "kubernetes", "--kubeconfig", kc,
		"--ssh-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--state-dir", filepath.Join(dir, "state"))
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("the gateway without pods/exec: %v (want it to exit with an error at once):\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "may not create pods/exec in") {
		t.Errorf("the gateway's error does not name the missing permissions:\n%s", out.String())
	}
}
