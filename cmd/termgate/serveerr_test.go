package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/backend/local"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/sessions"
	"github.com/termgate/termgate/sshd"
)

// TestServeErrAfterShutdown: what the SSH and HTTP listeners' Serve return
// once they were shut down is no error of run's; any other error is. The
// SSH one comes from a real sshd.Server (the old string match never
// matched gliderlabs' "ssh: Server closed").
func TestServeErrAfterShutdown(t *testing.T) {
	reg, err := sessions.New(sessions.Config{Backend: local.New(local.Config{Instances: []string{"web1"}, Dir: t.TempDir()})})
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	host, _ := gossh.NewSignerFromKey(priv)
	ak, _ := keys.ParseAuthorizedKeys(nil)
	srv, err := sshd.New(sshd.Config{HostSigner: host, Keys: ak, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := reg.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var sshErr error
	select {
	case sshErr = <-served:
	case <-ctx.Done():
		t.Fatal("Serve did not return after Shutdown")
	}
	if got := serveErr("ssh", sshErr); got != nil {
		t.Errorf("serveErr(ssh, %v) = %v, want nil", sshErr, got)
	}
	if got := serveErr("http", http.ErrServerClosed); got != nil {
		t.Errorf("serveErr(http, ErrServerClosed) = %v, want nil", got)
	}
	// A real failure that happens to say "server closed" is still one.
	for _, err := range []error{errors.New("accept: server closed the socket"), fmt.Errorf("accept: %w", errors.New("too many open files"))} {
		if got := serveErr("ssh", err); got == nil {
			t.Errorf("serveErr(ssh, %q) = nil, want an error", err)
		}
	}
}
