package websock

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/record"
	"github.com/termgate/termgate/sessions"
)

// TestRecordingOfRenamedInstance: issue 18 M2. After web1 is renamed to
// db9, a token limited to web* reads its session's recording neither
// under the old name nor under the new one, although the session (and
// what it prints after the rename) is there; a token allowed on db9 reads
// all of it under db9.
func TestRecordingOfRenamedInstance(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	rec, err := record.New(record.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := rec.Close(ctx); err != nil {
			t.Errorf("close the recorder: %v", err)
		}
	})
	be := newFakeBackend("web1")
	e := newEnv(t, be, func(c *sessions.Config) { c.Observe = rec.Observe }, func(c *Config) { c.RecordDir = dir })
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, err := e.reg.Attach(ctx, "web1", sessions.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Detach()
	id := e.reg.Sessions()[0].Session
	be.proc("web1").emit("before ")
	get := func(tok, inst string) (int, string) {
		resp := e.do("GET", "/api/recordings/"+inst+"/"+id, bearerHeader(tok), nil)
		return resp.StatusCode, body(t, resp)
	}
	waitUntil(t, "the recording holds the output", func() bool {
		code, b := get(tokWeb, "web1")
		return code == http.StatusOK && strings.Contains(b, "before")
	})

	be.rename(t, "web1", "db9")
	waitUntil(t, "the session follows the rename", func() bool {
		s := e.reg.Sessions()
		return len(s) == 1 && s[0].Instance == "db9" && s[0].Recording == "db9/"+id+".cast"
	})
	be.proc("web1").emit("SECRET-AFTER-RENAME")
	waitUntil(t, "the renamed instance's recording holds its output", func() bool {
		code, b := get(tokAll, "db9")
		return code == http.StatusOK && strings.Contains(b, "before") && strings.Contains(b, "SECRET-AFTER-RENAME")
	})
	for _, inst := range []string{"web1", "db9"} {
		if code, b := get(tokWeb, inst); code != http.StatusNotFound || strings.Contains(b, "SECRET") {
			t.Fatalf("a token limited to web* reads %s/%s after the rename: %d %q", inst, id, code, b)
		}
	}
	// Asked by the old name, a token allowed on both reads it too.
	if code, b := get(tokAll, "web1"); code != http.StatusOK || !strings.Contains(b, "SECRET-AFTER-RENAME") {
		t.Fatalf("the old name for a token allowed on the new one: %d %q", code, b)
	}
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
