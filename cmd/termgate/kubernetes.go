package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/klog/v2"

	"github.com/termgate/termgate/backend/kubernetes"
	"github.com/termgate/termgate/sessions"
)

// newKubernetesBackend connects to the API server (--kubeconfig, KUBECONFIG,
// the pod's service account, ~/.kube/config), checks that it answers and
// ends the shells an earlier run left in the namespace's pods.
func newKubernetesBackend(ctx context.Context, o *options, id backendIDs, log *slog.Logger) (sessions.Backend, func(), error) {
	// client-go reports stream troubles through klog (plain text on
	// stderr by default): into the gateway's structured log with them.
	klog.SetSlogLogger(log.With("component", "client-go"))
	loaded, err := kubernetes.LoadConfig(o.kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	ns := o.kubeNamespace
	if ns == "" {
		ns = loaded.Namespace
	}
	b, err := kubernetes.New(kubernetes.Config{
		REST:      loaded.REST,
		Namespace: ns,
		Label:     o.instanceLabel,
		Shell:     shellArgv(o.shell),
		Logger:    log,
		SelfPod:   loaded.SelfPod,
		GatewayID: id.gateway,
		Durable:   durable(o, id),
	})
	if err != nil {
		return nil, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.Ping(pctx); err != nil {
		return nil, nil, err
	}
	// Without these permissions sessions fail one by one later: say at
	// once which are missing.
	if err := b.CheckAccess(pctx); err != nil {
		return nil, nil, err
	}
	log.Info("kubernetes backend", "server", loaded.REST.Host, "namespace", ns, "in_cluster", loaded.InCluster)
	return b, func() {}, nil
}

// signinSecret is the Secret --signin-state-secret in the gateway's own
// namespace (the pod's, or the kubeconfig context's: not --kube-namespace,
// whose pods are the instances), reached as the backend reaches the API
// server. It checks at once that the gateway may get and update it.
func signinSecret(ctx context.Context, o *options, log *slog.Logger) (*kubernetes.SecretRecords, error) {
	loaded, err := kubernetes.LoadConfig(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	r, err := kubernetes.NewSecretRecords(loaded.REST, loaded.Namespace, o.signinStateSecret)
	if err != nil {
		return nil, fmt.Errorf("--signin-state-secret: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.CheckAccess(cctx); err != nil {
		return nil, err
	}
	log.Info("sign-in state", "secret", r.Where(""))
	return r, nil
}
