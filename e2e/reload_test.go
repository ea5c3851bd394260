package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Credentials are reloaded when their files change: a key removed from
// authorized_keys and a token removed from the token file stop working,
// the others keep working, without a restart.
func TestCredentialsReload(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-1"}})
	name := g.name("web-1")
	g.attach(t, keyWeb, name, 80, 24).roundTrip()
	if status, body := g.request(t, http.MethodGet, "/api/sessions", tokWeb, nil); status != http.StatusOK {
		t.Fatalf("the limited token before the reload: %d %s", status, body)
	}

	dropLines(t, filepath.Join(g.stateDir, "authorized_keys"), " "+keyWeb+"\n")
	dropLines(t, filepath.Join(g.stateDir, "api_token"), " limited ")

	eventually(t, "the removed key to be refused", func() bool {
		c, err := g.dialSSH(t, keyWeb, name)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
	eventually(t, "the removed token to be refused", func() bool {
		status, _ := g.request(t, http.MethodGet, "/api/sessions", tokWeb, nil)
		return status == http.StatusUnauthorized || status == http.StatusTooManyRequests
	})
	g.attach(t, keyAdmin, name, 80, 24).roundTrip()
	g.ws(t, tokAdmin, name).roundTrip()
}

// dropLines rewrites a file without the lines that contain substr (a line
// is matched with its newline).
func dropLines(t *testing.T, path, substr string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept strings.Builder
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(line, substr) {
			kept.WriteString(line)
		}
	}
	if kept.Len() == len(data) {
		t.Fatalf("%s has no line with %q", path, substr)
	}
	tmp := path + ".new"
	writeFile(t, tmp, []byte(kept.String()))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
