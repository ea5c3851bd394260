package websock

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRecordedInputOnlyForWriters: issue 18 L2. A recording's input events
// (--record-input: what writers typed, passwords at prompts that do not
// echo included) go only to credentials that may type into the instance;
// a read-only one gets the same recording without them.
func TestRecordedInputOnlyForWriters(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "web1"), 0o700); err != nil {
		t.Fatal(err)
	}
	head := "{\"version\":2,\"width\":80,\"height\":24,\"timestamp\":1}\n"
	out := "[0.100000, \"o\", \"Password: \"]\n"
	in := "[1.102518, \"i\", \"hunter2-SECRET\\n\"]\n"
	rest := "[1.200000, \"r\", \"100x30\"]\n[1.300000, \"o\", \"\\r\\n$ \"]\n"
	whole := head + out + in + rest
	if err := os.WriteFile(filepath.Join(dir, "web1", recWeb+".cast"), []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.RecordDir = dir })
	for tok, want := range map[string]string{tokAll: whole, tokWeb: whole, tokRO: head + out + rest} {
		resp := e.do("GET", "/api/recordings/web1/"+recWeb, bearerHeader(tok), nil)
		if got := body(t, resp); resp.StatusCode != http.StatusOK || got != want {
			t.Errorf("token %.4s: %d %q, want 200 and %q", tok, resp.StatusCode, got, want)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/x-asciicast" {
			t.Errorf("token %.4s: Content-Type %q", tok, ct)
		}
	}
	// A range does not get an observer around the filter.
	h := bearerHeader(tokRO)
	h.Set("Range", "bytes="+strconv.Itoa(len(head+out))+"-")
	resp := e.do("GET", "/api/recordings/web1/"+recWeb, h, nil)
	if got := body(t, resp); strings.Contains(got, "SECRET") {
		t.Fatalf("a read-only range request got the input: %d %q", resp.StatusCode, got)
	}
}
