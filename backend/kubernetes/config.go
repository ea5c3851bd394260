package kubernetes

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Loaded is where LoadConfig found the API server.
type Loaded struct {
	REST *rest.Config
	// Namespace is the kubeconfig context's namespace, or the pod's own in
	// the cluster ("default" when neither says).
	Namespace string
	// InCluster: the pod's service account is used.
	InCluster bool
	// SelfPod is the gateway's own pod name when it runs in the cluster.
	SelfPod string
}

// LoadConfig finds the API server: the kubeconfig file when one is named
// (kubeconfig, else KUBECONFIG), else the pod's service account when running
// in a cluster, else ~/.kube/config.
func LoadConfig(kubeconfig string) (*Loaded, error) {
	named := kubeconfig != "" || os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != ""
	if !named {
		if cfg, err := rest.InClusterConfig(); err == nil {
			ns := "default"
			if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(b) > 0 {
				ns = string(b)
			}
			self, _ := os.Hostname() // a pod's host name is its name
			return &Loaded{REST: tune(cfg), Namespace: ns, InCluster: true, SelfPod: self}, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		where := kubeconfig
		if where == "" {
			where = "KUBECONFIG or ~/.kube/config"
		}
		return nil, fmt.Errorf("kubernetes: no usable kubeconfig (%s) and not running in a cluster: %w", where, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: the kubeconfig's namespace: %w", err)
	}
	return &Loaded{REST: tune(cfg), Namespace: ns}, nil
}

// tune raises client-go's default client-side rate limit (5 QPS, burst 10):
// every attach, reset and kill is an API request, and a SIGTERM ends many
// sessions at once.
func tune(cfg *rest.Config) *rest.Config {
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "termgate"
	return cfg
}
