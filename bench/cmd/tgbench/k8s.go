package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// The Kubernetes paths (-kubernetes): termgate run with --backend
// kubernetes against a direct client-go TTY exec into the same pods (what
// `kubectl exec -it` does: WebSocket, falling back to SPDY), for
// throughput, keystroke echo and attach. They run in a namespace of their
// own on the cluster that -kubeconfig names (default: KUBECONFIG, else the
// test cluster of scripts/k8s-cluster.sh), which is deleted at the end.
const (
	pathK8sDirect    = "k8s-direct"
	pathK8sSSH       = "k8s-ssh"
	pathK8sWS        = "k8s-websocket"
	pathK8sSSHDur    = "k8s-ssh-durable"
	pathK8sWSDurable = "k8s-websocket-durable"
)

// k8sPaths are the measured paths: the durable ones go to a second
// gateway, run with --durable (when -durable is on), with pods of their
// own (every session in its own pod: clients of one shell would get each
// other's output).
var k8sPaths = []string{pathK8sDirect, pathK8sSSH, pathK8sWS, pathK8sSSHDur, pathK8sWSDurable}

// k8sPod is the pod each path's session is in (the direct exec runs
// beside the SSH session).
var k8sPod = map[string]int{pathK8sDirect: 0, pathK8sSSH: 0, pathK8sWS: 1, pathK8sSSHDur: 2, pathK8sWSDurable: 3}

// k8sEnv is one Kubernetes run: the cluster, the namespace and its pods,
// and the gateway (an env without Docker).
type k8sEnv struct {
	*env
	rest    *rest.Config
	cs      kubernetes.Interface
	ns      string
	durable *env // the --durable gateway; nil when -durable is off or it did not start
}

// kubeconfigFor is -kubeconfig, else KUBECONFIG, else the test cluster's.
func kubeconfigFor(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if k := os.Getenv("KUBECONFIG"); k != "" {
		return k
	}
	dir := os.Getenv("TERMGATE_K8S_DIR")
	if dir == "" {
		dir = "/var/cache/termgate-k8s"
	}
	return filepath.Join(dir, "etc", "admin.kubeconfig")
}

// connectKubernetes loads the kubeconfig and checks that the API server
// is ready.
func connectKubernetes(ctx context.Context, kubeconfig string) (*rest.Config, kubernetes.Interface, error) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil, nil, fmt.Errorf("no kubeconfig: %w (bring the test cluster up: make k8s-up)", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	rc.QPS, rc.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(pctx); err != nil {
		return nil, nil, fmt.Errorf("the API server at %s is not ready: %w", rc.Host, err)
	}
	return rc, cs, nil
}

// setupKubernetes creates the namespace, two pods (the SSH and WebSocket
// sessions must not share a shell; the direct exec runs beside the SSH
// session in the first) and the gateway.
func setupKubernetes(ctx context.Context, cfg *config, rc *rest.Config, cs kubernetes.Interface, logf func(string, ...any)) (k *k8sEnv, err error) {
	bin, err := filepath.Abs(cfg.termgate)
	if err != nil {
		return nil, err
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	runID := hex.EncodeToString(id[:])
	kcfg := *cfg
	k = &k8sEnv{env: &env{cfg: &kcfg, runID: runID}, rest: rc, cs: cs, ns: "tgbench-" + runID}
	defer func() {
		if err != nil {
			if terr := k.teardown(logf); terr != nil {
				logf("cleanup after a failed setup: %v", terr)
			}
			k = nil
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(cctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.ns}}, metav1.CreateOptions{}); err != nil {
		k.ns = ""
		return k, fmt.Errorf("create namespace: %w", err)
	}
	for { // pods cannot be created before the namespace's default service account exists
		if _, err := cs.CoreV1().ServiceAccounts(k.ns).Get(cctx, "default", metav1.GetOptions{}); err == nil {
			break
		} else if cctx.Err() != nil {
			return k, fmt.Errorf("namespace %s: no default service account: %w", k.ns, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	logf("kubernetes run %s: pods from %s in namespace %s", runID, cfg.kubeImage, k.ns)
	grace := int64(0)
	for i := range 4 {
		name := fmt.Sprintf("tgbench-%c", 'a'+i)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{labelKey: runID}},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: &grace,
				AutomountServiceAccountToken:  new(bool),
				Containers: []corev1.Container{{
					Name: "shell", Image: cfg.kubeImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sleep", "1000000"},
				}},
			},
		}
		if _, err := cs.CoreV1().Pods(k.ns).Create(cctx, pod, metav1.CreateOptions{}); err != nil {
			return k, fmt.Errorf("create pod %s: %w", name, err)
		}
		k.containers = append(k.containers, name)
	}
	for _, name := range k.containers {
		for {
			p, err := cs.CoreV1().Pods(k.ns).Get(cctx, name, metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodRunning {
				break
			}
			if cctx.Err() != nil {
				return k, fmt.Errorf("pod %s not running within 90s: %v", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := k.makeState(); err != nil {
		return k, err
	}
	// The flags after tgbench's own win (the last of a flag counts).
	kcfg.gatewayArgs = append(slices.Clone(cfg.gatewayArgs), "--backend", "kubernetes",
		"--kubeconfig", kubeconfigFor(cfg.kubeconfig), "--kube-namespace", k.ns,
		"--instance-label", labelKey+"="+runID)
	logf("starting %s --backend kubernetes", cfg.termgate)
	if err := k.startGateway(ctx, bin); err != nil {
		return k, err
	}
	logf("gateway up: ssh %s, http %s", k.sshAddr, k.webAddr)
	if cfg.durable {
		dcfg := kcfg
		dcfg.gatewayArgs = append(slices.Clone(kcfg.gatewayArgs), "--durable")
		if cfg.holder != "" {
			abs, err := filepath.Abs(cfg.holder)
			if err != nil {
				return k, err
			}
			dcfg.gatewayEnv = []string{"TERMGATE_HOLDER_BINARY=" + abs}
		}
		de := &env{cfg: &dcfg, runID: runID + "d", containers: k.containers}
		if err := de.makeState(); err != nil {
			return k, err
		}
		if err := de.startGateway(ctx, bin); err != nil {
			_ = de.teardown(logf)
			logf("the --durable gateway did not start: %v", err)
		} else {
			k.durable = de
			logf("durable gateway up: ssh %s, http %s", de.sshAddr, de.webAddr)
		}
	}
	return k, nil
}

// teardown stops the gateway and deletes the namespace (its pods go with
// it, in the background).
func (k *k8sEnv) teardown(logf func(string, ...any)) error {
	var errs []error
	if k.durable != nil {
		if err := k.durable.teardown(logf); err != nil {
			errs = append(errs, fmt.Errorf("the --durable gateway: %w", err))
		}
		k.durable = nil
	}
	if err := k.env.teardown(logf); err != nil {
		errs = append(errs, err)
	}
	if k.ns != "" {
		logf("deleting namespace %s", k.ns)
		ctx, cancel := context.WithTimeout(context.Background(), removeWait)
		err := k.cs.CoreV1().Namespaces().Delete(ctx, k.ns, metav1.DeleteOptions{})
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("delete namespace %s: %w (kubectl delete namespace %s)", k.ns, err, k.ns))
		}
		k.ns = ""
	}
	return errors.Join(errs...)
}

// k8sInstance maps a path to its pod, as instanceFor does for containers.
func (k *k8sEnv) k8sInstance(path string) string { return k.instance(k8sPod[path]) }

// paths are the measured paths: the durable ones only with -durable.
func (k *k8sEnv) paths() []string {
	if k.cfg.durable {
		return k8sPaths
	}
	return k8sPaths[:3]
}

// gateway is the gateway that serves path (nil: the --durable one did not
// start).
func (k *k8sEnv) gateway(path string) *env {
	if path == pathK8sSSHDur || path == pathK8sWSDurable {
		return k.durable
	}
	return k.env
}

func (k *k8sEnv) dial(ctx context.Context, path, instance string) (term, error) {
	g := k.gateway(path)
	if g == nil {
		return nil, errNoDurable
	}
	switch path {
	case pathK8sDirect:
		return k.dialExec(ctx, instance)
	case pathK8sSSH, pathK8sSSHDur:
		return dialSSH(ctx, g, instance)
	case pathK8sWS, pathK8sWSDurable:
		return dialWS(ctx, g, instance)
	}
	return nil, fmt.Errorf("unknown path %q", path)
}

// execTerm is `kubectl exec -it POD -- env TERM=... /bin/sh` with
// client-go: a TTY exec over WebSocket (SPDY when the server refuses the
// upgrade), the window size sent on its resize stream as it starts. Its
// stdin and stdout are in-memory pipes whose far ends take deadlines.
type execTerm struct {
	in, out   net.Conn // our ends: we write in, read out
	inX, outX net.Conn // the exec's ends
	cancel    context.CancelFunc
	done      chan struct{}
	err       error
	once      sync.Once
}

func (k *k8sEnv) dialExec(ctx context.Context, pod string) (*execTerm, error) {
	req := k.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(k.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: "shell", Command: []string{"env", "TERM=" + benchTerm, benchShell},
			Stdin: true, Stdout: true, TTY: true,
		}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(k.rest, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(k.rest, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, err
	}
	t := &execTerm{done: make(chan struct{})}
	t.in, t.inX = net.Pipe()
	t.outX, t.out = net.Pipe()
	sctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	sizes := make(chan *remotecommand.TerminalSize, 1)
	sizes <- &remotecommand.TerminalSize{Width: benchCols, Height: benchRows}
	up := make(chan struct{})
	var upOnce sync.Once
	go func() {
		defer close(t.done)
		t.err = ex.StreamWithContext(sctx, remotecommand.StreamOptions{
			Stdin: readHook{t.inX, func() { upOnce.Do(func() { close(up) }) }}, Stdout: t.outX, Tty: true,
			TerminalSizeQueue: sizeQueue{sizes, t.done},
		})
		t.outX.Close()
		t.inX.Close()
	}()
	select {
	case <-up:
		return t, nil
	case <-t.done:
		return nil, fmt.Errorf("kubernetes exec in %s: %w", pod, t.err)
	case <-ctx.Done():
		t.Close()
		return nil, ctx.Err()
	}
}

// readHook calls first on the exec's first read of stdin: its stream is up.
type readHook struct {
	r     io.Reader
	first func()
}

func (h readHook) Read(p []byte) (int, error) {
	h.first()
	return h.r.Read(p)
}

type sizeQueue struct {
	sizes chan *remotecommand.TerminalSize
	done  chan struct{}
}

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case s := <-q.sizes:
		return s
	case <-q.done:
		return nil
	}
}

func (t *execTerm) Read(p []byte) (int, error)  { return t.out.Read(p) }
func (t *execTerm) Write(p []byte) (int, error) { return t.in.Write(p) }
func (t *execTerm) SetDeadline(d time.Time) error {
	_ = t.in.SetDeadline(d)
	return t.out.SetDeadline(d)
}

// Close ends the shell (exit) and the stream.
func (t *execTerm) Close() error {
	t.once.Do(func() {
		_ = t.in.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = t.in.Write([]byte("\x03exit\r"))
		t.cancel()
		t.in.Close()
		t.out.Close()
		<-t.done
	})
	return nil
}

// k8sOpen dials path and puts the shell in step, as openShell does.
func (k *k8sEnv) open(ctx context.Context, path string) (*shell, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	t, err := k.dial(dctx, path, k.k8sInstance(path))
	cancel()
	if err != nil {
		return nil, err
	}
	s := newShell(ctx, t, path)
	if _, _, err := s.command("", 10*time.Second); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: first command: %w", path, err)
	}
	return s, nil
}

// timeAttach times a dial to the first byte of output (the replay of an
// existing termgate session) or, with untilPrompt, to the shell's prompt
// (see the Docker paths' timeAttach).
func (k *k8sEnv) timeAttach(ctx context.Context, path string, untilPrompt bool, then func(*shell) error) (time.Duration, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	t0 := time.Now()
	t, err := k.dial(dctx, path, k.k8sInstance(path))
	if err != nil {
		return 0, err
	}
	s := newShell(ctx, t, path)
	defer s.Close()
	s.bound(dialTimeout)
	if err := s.firstOutput(untilPrompt); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	if then != nil {
		return d, then(s)
	}
	return d, nil
}

// measureKubernetes runs the Kubernetes paths and returns their report,
// or nil when -kubernetes is auto and no cluster answers.
func measureKubernetes(ctx context.Context, cfg *config, logf func(string, ...any)) *Report {
	if cfg.kubernetes == "off" {
		return nil
	}
	kc := kubeconfigFor(cfg.kubeconfig)
	rc, cs, err := connectKubernetes(ctx, kc)
	rep := &Report{Started: time.Now(), Host: Host{LoadStart: loadAvg()},
		Config: Settings{Bytes: cfg.bytes, Runs: cfg.runs, Keystrokes: cfg.keystrokes, Attaches: cfg.attaches,
			Image: cfg.kubeImage, Shell: benchShell, Window: fmt.Sprintf("%dx%d", benchCols, benchRows)}}
	if err != nil {
		if cfg.kubernetes == "auto" {
			logf("kubernetes paths skipped: %v", err)
			return nil
		}
		rep.Errors = append(rep.Errors, "kubernetes: "+err.Error())
		return rep
	}
	rep.Host.DockerVersion = "kubernetes " + rc.Host
	if v, err := cs.Discovery().ServerVersion(); err == nil {
		rep.Host.DockerVersion = "Kubernetes " + v.GitVersion
	}
	k, err := setupKubernetes(ctx, cfg, rc, cs, logf)
	if err != nil {
		rep.Errors = append(rep.Errors, "kubernetes: "+err.Error())
		return rep
	}
	rctx, cancel := context.WithTimeoutCause(ctx, cfg.timeout, fmt.Errorf("the -timeout of %s ran out", cfg.timeout))
	k.measure(rctx, rep, logf)
	cancel()
	if err := k.teardown(logf); err != nil {
		rep.Errors = append(rep.Errors, "kubernetes cleanup: "+err.Error())
	}
	rep.Host.LoadEnd = loadAvg()
	rep.DurationSec = time.Since(rep.Started).Seconds()
	return rep
}

func (k *k8sEnv) measure(ctx context.Context, rep *Report, logf func(string, ...any)) {
	cfg := k.cfg
	ps := k.paths()
	shells := map[string]*shell{}
	for _, p := range ps {
		s, err := k.open(ctx, p)
		if err != nil {
			logf("%s: %v", p, err)
			continue
		}
		shells[p] = s
	}
	logf("kubernetes throughput: %d bytes, %d runs per path", cfg.bytes, cfg.runs)
	throughput(ctx, cfg, ps, shells, rep, logf)
	for _, p := range ps { // reopen what broke
		if s, ok := shells[p]; !ok || s.term == nil {
			if s, err := k.open(ctx, p); err == nil {
				shells[p] = s
			}
		}
	}
	logf("kubernetes keystroke echo: %d keystrokes per path", cfg.keystrokes)
	latency(ctx, cfg, ps, shells, rep)
	for _, s := range shells {
		s.Close()
	}
	logf("kubernetes attach to an existing session vs a fresh exec: %d each", cfg.attaches)
	samples := map[string][]float64{}
	failed := map[string]error{}
	for i := 0; i < cfg.attaches && ctx.Err() == nil; i++ {
		for _, p := range rotate(ps, i) {
			if failed[p] != nil {
				continue
			}
			d, err := k.timeAttach(ctx, p, p == pathK8sDirect, nil)
			if err != nil {
				failed[p] = fmt.Errorf("attach %d: %w", i+1, cause(ctx, err))
				continue
			}
			samples[p] = append(samples[p], float64(d.Microseconds())/1e3)
		}
	}
	for _, p := range ps {
		if failed[p] != nil {
			rep.fail("attach", p, failed[p])
			continue
		}
		rep.addSamples(ctx, "attach", p, median(samples[p]), samples[p], cfg.attaches, "")
	}
	k.attachNew(ctx, rep)
	rep.k8sRatios()
}

// attachNew times attaches that start the session (termgate's exec plus
// its own work); each then types exit, which ends the session.
func (k *k8sEnv) attachNew(ctx context.Context, rep *Report) {
	n := min(k.cfg.attaches, 5)
	exit := func(s *shell) error {
		s.bound(10 * time.Second)
		if _, err := s.Write([]byte("exit\r")); err != nil {
			return err
		}
		for {
			if _, err := s.Read(s.buf); err != nil {
				return nil
			}
		}
	}
	for _, p := range k.paths()[1:] { // not the direct exec
		inst, g := k.k8sInstance(p), k.gateway(p)
		if g == nil {
			rep.fail("attach_new", p, errNoDurable)
			continue
		}
		var samples []float64
		err := func() error {
			if has, err := hasSession(ctx, g, inst); err != nil {
				return err
			} else if has {
				if _, err := k.timeAttach(ctx, p, true, exit); err != nil {
					return err
				}
				if err := waitNoSession(ctx, g, inst); err != nil {
					return err
				}
			}
			for i := 0; i < n; i++ {
				d, err := k.timeAttach(ctx, p, true, exit)
				if err != nil {
					return fmt.Errorf("attach %d: %w", i+1, cause(ctx, err))
				}
				samples = append(samples, float64(d.Microseconds())/1e3)
				if err := waitNoSession(ctx, g, inst); err != nil {
					return err
				}
			}
			return nil
		}()
		if err != nil {
			rep.fail("attach_new", p, err)
			continue
		}
		rep.addSamples(ctx, "attach_new", p, median(samples), samples, n, "compared with a fresh client-go exec")
	}
}

// k8sRatios divides each termgate result by the direct exec's (a new
// session's attach by a fresh exec's attach), run by run where paired.
func (r *Report) k8sRatios() {
	find := func(metric string) *Result {
		if metric == "attach_new" {
			metric = "attach"
		}
		return r.find(metric, pathK8sDirect)
	}
	for i, res := range r.Results {
		d := find(res.Metric)
		if res.Path == pathK8sDirect || res.Error != "" || d == nil || d.Error != "" || d.Value <= 0 {
			continue
		}
		ratio := round(res.Value / d.Value)
		r.Results[i].Ratio = &ratio
		if d.Metric == res.Metric && len(d.Samples) == len(res.Samples) && len(res.Samples) > 1 {
			for j, v := range res.Samples {
				if d.Samples[j] > 0 {
					r.Results[i].Paired = append(r.Results[i].Paired, round(v/d.Samples[j]))
				}
			}
		}
	}
}

// printKubernetes prints the Kubernetes paths' table.
func printKubernetes(w io.Writer, r *Report) {
	fmt.Fprintf(w, "\ntermgate --backend kubernetes vs direct client-go exec (kubectl exec -it) — %s\n\n", r.Host.DockerVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tPATH\tMEDIAN\tMIN..MAX\tRATIO\tPAIRED MIN/MED/MAX\t")
	for _, m := range metricOrder {
		for _, res := range r.Results {
			if res.Metric != m.name {
				continue
			}
			if res.Error != "" {
				fmt.Fprintf(tw, "%s\t%s\tfailed (below)\t\t\t\t\n", m.title, res.Path)
				continue
			}
			ratio, paired := "-", "-"
			if res.Ratio != nil {
				ratio = fmt.Sprintf("%.2f", *res.Ratio)
			}
			if len(res.Paired) > 0 {
				paired = fmt.Sprintf("%.2f / %.2f / %.2f", slices.Min(res.Paired), median(res.Paired), slices.Max(res.Paired))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", m.title, res.Path, formatValue(res.Value, res.Unit), spread(res), ratio, paired)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "\nratio = path / k8s-direct (a new session's attach: / a fresh exec's attach); throughput higher is better, the rest lower.")
	for _, e := range r.Errors {
		fmt.Fprintln(w, "error:", e)
	}
}

// runKubernetes measures, prints and writes (next to -out, as
// NAME-kubernetes.json) the Kubernetes paths; it returns the exit status
// (0 also when -kubernetes=auto found no cluster).
func runKubernetes(ctx context.Context, cfg *config, logf func(string, ...any)) int {
	rep := measureKubernetes(ctx, cfg, logf)
	if rep == nil {
		return 0
	}
	printKubernetes(os.Stdout, rep)
	if ctx.Err() != nil {
		return 1
	}
	if cfg.out != "" && cfg.out != "-" {
		out := strings.TrimSuffix(cfg.out, ".json") + "-kubernetes.json"
		if err := writeJSON(out, rep); err != nil {
			fmt.Fprintln(os.Stderr, "tgbench:", err)
			return 1
		}
		logf("kubernetes results written to %s", out)
	}
	if len(rep.Errors) > 0 {
		return 1
	}
	return 0
}
