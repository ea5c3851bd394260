package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/sftp"
	gossh "golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"

	"github.com/termgate/termgate/internal/termtest"
)

// TestGatewayLoginInAPod: LOGIN@POD runs commands and sftp as the pod's
// user LOGIN, in its home, although Kubernetes' exec has no user field:
// the in-instance helper changes user (CONTRACT "Named sessions and
// logins"). A login the key does not list is refused.
func TestGatewayLoginInAPod(t *testing.T) {
	t.Parallel()
	state := chmod700(t, t.TempDir())
	g := startGateway(t, state)
	pod := runPod(t, func(p *corev1.Pod) {
		// The cluster's busybox has no adduser: the lines it would write.
		p.Spec.Containers[0].Command = []string{"sh", "-c", "echo app:x:1000:1000::/home/app:/bin/sh >>/etc/passwd; echo app:x:1000: >>/etc/group; " +
			"mkdir -p /home/app; chown 1000:1000 /home/app; chmod 755 /; exec sleep 100000"}
	})
	for deadline := time.Now().Add(waitFor); !strings.Contains(podSh(t, pod, "cat /etc/passwd"), "app:"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pod's user app never appeared")
		}
	}

	dial := func(user string) *gossh.Client {
		t.Helper()
		c, err := gossh.Dial("tcp", g.sshAddr, termtest.ClientConfig(user, g.signer, g.hostKey, waitFor))
		if err != nil {
			t.Fatalf("ssh %s: %v", user, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// Without logins= the key is the default user only.
	if r := termtest.Run(t, dial("app@"+pod), "id -un", waitFor); r.Code == 0 || !strings.Contains(r.Stderr, "login") {
		t.Fatalf("a key without logins= ran as app: %+v", r)
	}

	// The key lists app: reload the keys with the option.
	keysFile := filepath.Join(state, "authorized_keys")
	line, err := os.ReadFile(keysFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keysFile, append([]byte(`logins="app" `), line...), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded := strings.Count(g.logs.String(), "loaded authorized keys")
	if err := syscall.Kill(g.proc.PID(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(waitFor); strings.Count(g.logs.String(), "loaded authorized keys") == loaded; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not reload its keys:\n%s", g.logs)
		}
	}

	c := dial("app@" + pod)
	if r := termtest.Run(t, c, "id -un; pwd", waitFor); r.Code != 0 || r.Stdout != "app\n/home/app\n" {
		t.Fatalf("app@%s: %+v, want app in /home/app", pod, r)
	}
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	rd, err := s.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestSubsystem("sftp"); err != nil {
		t.Fatal(err)
	}
	fc, err := sftp.NewClientPipe(rd, w)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fc.Create("from-sftp.txt") // relative: the login's home
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	_ = fc.Close()
	if owner := strings.TrimSpace(podSh(t, pod, "stat -c %U /home/app/from-sftp.txt")); owner != "app" {
		t.Errorf("the file sftp wrote as app is owned by %q", owner)
	}
}
