package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A session runs as one login for its life: its shell starts as the
// starter's login, a read-write attach with another is refused with a
// message naming the login to use, an observer watches whatever the login,
// a reset keeps it, and the listing carries it.
func TestSessionRunsAsOneLogin(t *testing.T) {
	r, fb := newTestRegistry(t, Config{})
	app := attach(t, r, "web1+build", AttachOptions{Login: "app"})
	if p := fb.last(); p.spec.Login != "app" {
		t.Fatalf("shell started as %q, want app", p.spec.Login)
	}
	_, err := r.Attach(context.Background(), "web1+build", AttachOptions{Login: "deploy"})
	var wrong *WrongLoginError
	if !errors.As(err, &wrong) || wrong.Login != "app" || !strings.Contains(err.Error(), `attach to it as app@web1+build@HOST`) {
		t.Fatalf("attach as deploy: %v, want a refusal naming app", err)
	}
	_, err = r.Attach(context.Background(), "web1+build", AttachOptions{})
	if !errors.As(err, &wrong) || !strings.Contains(err.Error(), `runs as "app", not as the instance's default user`) {
		t.Fatalf("attach as the default user: %v", err)
	}
	obs := attach(t, r, "web1+build", AttachOptions{ReadOnly: true, Login: "other"})
	obs.Detach()
	if in := findAddr(r, "web1+build"); in == nil || in.Login != "app" {
		t.Fatalf("listing %+v, want login app", in)
	}
	if _, err := r.Reset(context.Background(), "web1+build", "alice"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return fb.starts.Load() == 2 })
	if p := fb.last(); p.spec.Login != "app" {
		t.Fatalf("reset started the shell as %q, want app", p.spec.Login)
	}
	app.Detach()
	def := attach(t, r, "web1", AttachOptions{})
	if p := fb.last(); p.spec.Login != "" {
		t.Fatalf("default session as %q", p.spec.Login)
	}
	_, err = r.Attach(context.Background(), "web1", AttachOptions{Login: "app"})
	if !errors.As(err, &wrong) || !strings.Contains(err.Error(), "attach to it without LOGIN@") {
		t.Fatalf("attach as app to the default user's session: %v", err)
	}
	def.Detach()
}
