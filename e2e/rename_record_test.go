package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecordingFollowsRename: issue 18 M2, with the real engine. After
// `docker rename` of a recorded instance, what it prints is recorded under
// the new name (the file moved there, with what came before), and a token
// limited to the old name's pattern reads the recording under neither
// name; the admin token reads it under the new one.
func TestRecordingFollowsRename(t *testing.T) {
	t.Parallel()
	recDir := filepath.Join(t.TempDir(), "rec")
	g := newGateway(t, options{containers: []string{"web-1"}, args: []string{"--record-dir", recDir}})
	old, renamed := g.name("web-1"), g.name("privx")
	w := g.ws(t, tokAdmin, old)
	session := w.attached.Session
	w.send("echo before-$((6*7))")
	w.expect(`before-42`)
	waitFile(t, filepath.Join(recDir, old, session+".cast"), "before-42")

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if out, err := docker(ctx, "rename", old, renamed); err != nil {
		t.Fatalf("docker rename: %v %s", err, out)
	}
	t.Cleanup(func() { // the fixture removes its containers by name
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_, _ = docker(ctx, "rename", renamed, old)
	})
	eventually(t, "the session follows the rename", func() bool {
		_, ok := g.session(t, renamed)
		return ok
	})
	w.send("echo SECRET-AFTER-RENAME-$((6*7))")
	w.expect(`SECRET-AFTER-RENAME-42`)
	path := filepath.Join(recDir, renamed, session+".cast")
	waitFile(t, path, "SECRET-AFTER-RENAME-42")
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "before-42") {
		t.Fatalf("the moved recording lost what came before the rename: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(recDir, old, session+".cast")); err == nil {
		t.Fatal("a recording is left under the old name")
	}
	for _, inst := range []string{old, renamed} {
		status, body := g.request(t, http.MethodGet, "/api/recordings/"+inst+"/"+session, tokWeb, nil)
		if status != http.StatusNotFound || strings.Contains(string(body), "SECRET") {
			t.Fatalf("a token limited to web-* reads %s/%s: %d %q", inst, session, status, body)
		}
	}
	deadline := time.Now().Add(waitFor)
	for {
		status, body := g.request(t, http.MethodGet, "/api/recordings/"+renamed+"/"+session, tokAdmin, nil)
		if status == http.StatusOK && strings.Contains(string(body), "SECRET-AFTER-RENAME-42") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admin token under the new name: %d %q", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
