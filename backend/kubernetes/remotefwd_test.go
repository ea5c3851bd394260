package kubernetes

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// TestGatewayRemoteForwardInAPod: ssh -R against a real gateway on the
// cluster (x/crypto's client: tcpip-forward, port 0): the listener is in
// the pod (a connection made there, through the same gateway's -W into
// the pod, comes back to the test's Accept), each side's end reaches the
// other, and the cancel leaves no helper in the pod.
func TestGatewayRemoteForwardInAPod(t *testing.T) {
	t.Parallel()
	pod := runPod(t, nil)
	g := newGateway(t)
	c, err := gossh.Dial("tcp", g.sshAddr, &gossh.ClientConfig{
		User: pod, Auth: []gossh.AuthMethod{gossh.PublicKeys(g.signer)},
		HostKeyCallback: gossh.FixedHostKey(g.hostKey), Timeout: waitFor,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ssh -R 0 in the pod: %v", err)
	}
	addr := l.Addr().String()
	if _, port, _ := net.SplitHostPort(addr); port == "0" {
		t.Fatalf("the reply carried no port: %s", addr)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- conn
	}()
	// A client in the pod: the helper's dial, through -W.
	in, err := c.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("connecting to the -R port inside the pod: %v", err)
	}
	defer in.Close()
	var back net.Conn
	select {
	case back = <-accepted:
		if back == nil {
			t.Fatal("the listener ended")
		}
	case <-time.After(waitFor):
		t.Fatal("the connection made in the pod did not come back")
	}
	defer back.Close()
	_ = in.SetDeadline(time.Now().Add(waitFor))
	_ = back.SetDeadline(time.Now().Add(waitFor))
	// The pod's side ends first; the test's side still answers.
	if _, err := io.WriteString(in, "from the pod"); err != nil {
		t.Fatal(err)
	}
	_ = in.(interface{ CloseWrite() error }).CloseWrite()
	if got, err := io.ReadAll(back); err != nil || string(got) != "from the pod" {
		t.Fatalf("the test read %q, %v; want the pod's bytes and its EOF", got, err)
	}
	if _, err := io.WriteString(back, "answer"); err != nil {
		t.Fatal(err)
	}
	_ = back.(interface{ CloseWrite() error }).CloseWrite()
	if got, err := io.ReadAll(in); err != nil || string(got) != "answer" {
		t.Fatalf("the pod read %q, %v; want the answer and EOF", got, err)
	}
	_ = in.Close()
	_ = back.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(waitFor); ; time.Sleep(200 * time.Millisecond) {
		ps := podSh(t, pod, "ps -o args; netstat -ltn")
		if !strings.Contains(ps, " listen ") && !strings.Contains(ps, " fetch ") && !strings.Contains(ps, addr+" ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener is left in the pod:\n%s", ps)
		}
	}
}
