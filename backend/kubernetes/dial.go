package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	//lint:ignore SA1019 client-go's transport/spdy (Negotiate) still returns this package's Connection
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// forwardRefusalWait is how long Dial waits for the kubelet to say that
// the pod refused the connection: the port-forward protocol never
// confirms a connect, it only reports a failure on the error stream, and
// a refusal the client can print is worth this much latency.
const forwardRefusalWait = 300 * time.Millisecond

// forwardErrLimit bounds what is read from the error stream (the kubelet
// writes one line; the pod's node is not trusted with more).
const forwardErrLimit = 4 << 10

// Dial connects to host:port from inside the instance's pod. It runs
// termgate's helper in the pod first (exechost's Dial: termgate-holder
// dial over an exec, as on Docker): any host the pod can reach, and each
// side's end (a half-close either way) passed on at once. Where the helper
// cannot run (a read-only root, only noexec directories) it falls back to
// the API server's pods/portforward, which reaches the pod's own loopback
// or IP only and whose half-close is the runtime's (portForward).
func (b *Backend) Dial(ctx context.Context, inst sessions.Instance, host string, port int) (remote.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, &remote.Unavailable{Why: fmt.Sprintf("invalid port %d", port)}
	}
	c, err := b.Host.Dial(ctx, inst, host, port)
	var cannot *remote.Unavailable
	if !errors.As(err, &cannot) {
		return c, err
	}
	b.log.Debug("kubernetes: forwarding through pods/portforward: termgate's helper cannot run in the pod", "instance", inst.Name, "reason", cannot.Why)
	return b.portForwardDial(ctx, inst, host, port)
}

// portForwardDial connects to port in the instance's pod through the API
// server's pods/portforward (SPDY, a POST: RBAC create on
// pods/portforward), as kubectl port-forward does. The kubelet connects to
// the pod's own loopback, so only 127.0.0.1, ::1, localhost or the pod's
// IP can be reached this way; other hosts are refused with a reason.
// Every forwarded connection is an API connection of its own: closing it
// ends everything it holds.
//
// The protocol has a half-close each way, but the runtime ends the whole
// forward about a second after either direction ends (containerd's
// PortForward; the kubelet then closes the data stream): the pod's close
// reaches the client within that second, and what the client sends after
// the pod's half-close, or what the pod answers later than a second after
// the client's half-close, is lost without an error.
func (b *Backend) portForwardDial(ctx context.Context, inst sessions.Instance, host string, port int) (remote.Conn, error) {
	t, err := parseID(inst)
	if err != nil {
		return nil, err
	}
	if err := b.forwardHost(ctx, t, host, port); err != nil {
		return nil, err
	}
	conn, err := b.portForward(ctx, t)
	if err != nil {
		return nil, err
	}
	c, err := openForwardStreams(conn, port)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("kubernetes port-forward to pod %q port %d: %w", t.pod, port, err)
	}
	select {
	case <-c.errDone:
		if c.errMsg != "" {
			_ = c.Close()
			return nil, &remote.Unavailable{Why: fmt.Sprintf("pod %q refused port %d: %s", t.pod, port, c.errMsg)}
		}
	case <-time.After(forwardRefusalWait):
	case <-ctx.Done():
		_ = c.Close()
		return nil, ctx.Err()
	}
	return c, nil
}

// forwardHost refuses a host the pod's port-forward cannot reach.
func (b *Backend) forwardHost(ctx context.Context, t target, host string, port int) error {
	switch strings.ToLower(host) {
	case "127.0.0.1", "localhost", "::1":
		return nil
	}
	refused := &remote.Unavailable{Why: fmt.Sprintf("a Kubernetes pod is reached through its own loopback only: "+
		"forward to 127.0.0.1:%d (or the pod's IP), not %s", port, clipText(host, 100))}
	pod, err := b.cs.CoreV1().Pods(b.ns).Get(ctx, t.pod, metav1.GetOptions{})
	if err != nil {
		return refused
	}
	for _, ip := range pod.Status.PodIPs {
		if ip.IP == host {
			return nil
		}
	}
	return refused
}

// portForward opens the SPDY connection of pods/portforward under ctx.
func (b *Backend) portForward(ctx context.Context, t target) (httpstream.Connection, error) {
	u := b.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(b.ns).Name(t.pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(b.rest)
	if err != nil {
		return nil, fmt.Errorf("kubernetes port-forward: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, err
	}
	conn, proto, err := spdy.Negotiate(upgrader, &http.Client{Transport: transport}, req, portforward.PortForwardProtocolV1Name)
	if err != nil {
		if forbidden(err) {
			return nil, fmt.Errorf("kubernetes RBAC: the gateway may not port-forward to pod %q of namespace %q: grant its account "+
				"\"create\" on \"pods/portforward\" (README, Kubernetes: the RBAC the gateway needs): %w", t.pod, b.ns, err)
		}
		return nil, fmt.Errorf("kubernetes port-forward to pod %q: %w", t.pod, err)
	}
	if proto != portforward.PortForwardProtocolV1Name {
		_ = conn.Close()
		return nil, fmt.Errorf("kubernetes port-forward to pod %q: the API server speaks %q, not %q", t.pod, proto, portforward.PortForwardProtocolV1Name)
	}
	return conn, nil
}

// forwardConn is one forwarded connection: its data stream, and the error
// stream read by a goroutine the conn owns (Close waits for it).
type forwardConn struct {
	conn    httpstream.Connection
	data    httpstream.Stream
	errDone chan struct{} // closed when the error stream ended; errMsg is set before
	errMsg  string
	once    sync.Once
}

// openForwardStreams creates the error and data streams of one forward
// (the protocol kubectl speaks: portforward.go handleConnection).
func openForwardStreams(conn httpstream.Connection, port int) (*forwardConn, error) {
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, strconv.Itoa(port))
	h.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(h)
	if err != nil {
		return nil, fmt.Errorf("error stream: %w", err)
	}
	_ = errStream.Close() // nothing is written to it
	c := &forwardConn{conn: conn, errDone: make(chan struct{})}
	go func() {
		defer close(c.errDone)
		msg, _ := io.ReadAll(io.LimitReader(errStream, forwardErrLimit))
		c.errMsg = clipText(strings.TrimSpace(string(msg)), 300)
	}()
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	if c.data, err = conn.CreateStream(h); err != nil {
		_ = conn.Close()
		<-c.errDone
		return nil, fmt.Errorf("data stream: %w", err)
	}
	return c, nil
}

// Read reads what the pod's port sent. At the end of the stream, a
// failure the kubelet reported is returned instead of io.EOF.
func (c *forwardConn) Read(p []byte) (int, error) {
	n, err := c.data.Read(p)
	if errors.Is(err, io.EOF) {
		select {
		case <-c.errDone:
			if c.errMsg != "" {
				return n, errors.New("kubernetes port-forward: " + c.errMsg)
			}
		default:
		}
	}
	return n, err
}

func (c *forwardConn) Write(p []byte) (int, error) { return c.data.Write(p) }

// CloseWrite half-closes the data stream: the pod's port reads EOF.
func (c *forwardConn) CloseWrite() error { return c.data.Close() }

// Close drops the streams and the API connection and waits for the error
// stream's reader.
func (c *forwardConn) Close() error {
	c.once.Do(func() {
		_ = c.data.Reset()
		_ = c.conn.Close()
		<-c.errDone
	})
	return nil
}

// clipText makes text from the pod's node or a client fit for a message:
// control characters become '?', at most n bytes.
func clipText(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
