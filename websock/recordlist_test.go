package websock

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listRecordings asks GET path with token and decodes the answer.
func listRecordings(t *testing.T, e *env, path, token string) (int, []recordingInfo) {
	t.Helper()
	resp := e.do("GET", path, bearerHeader(token), nil)
	b := body(t, resp)
	var out []recordingInfo
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(b), &out); err != nil {
			t.Fatalf("GET %s: %v in %q", path, err, b)
		}
	}
	return resp.StatusCode, out
}

func sessionsOf(list []recordingInfo) string {
	var s []string
	for _, r := range list {
		s = append(s, r.Instance+"/"+r.Session)
	}
	return strings.Join(s, " ")
}

// TestRecordingsList: GET /api/recordings lists exactly what GET
// /api/recordings/{name}/{session} would serve the same token: all for an
// unlimited token, web* only for limited and read-only ones (db1's
// recording is not even named), nothing once the token is revoked (401),
// and 404 with a hint when --record-dir is off. Each entry has the size,
// the header's start and size and the last event's time; continued files,
// symbolic links and foreign names are not listed.
func TestRecordingsList(t *testing.T) {
	dir, web := recordDir(t)
	// Strangers in the directory: a link to db1 under a name web* tokens
	// may use, a continued file, a file that is no session.
	if err := os.Symlink(filepath.Join(dir, "db1"), filepath.Join(dir, "web9")); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{recWeb + ".continued-1.cast", "notes.txt", "ZZZ.cast"} {
		if err := os.WriteFile(filepath.Join(dir, "web1", n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tf := newTokenFile(t, tokAll+" alice", tokWeb+" webonly instances=web*", tokRO+" auditor instances=web* read-only")
	e := newEnv(t, newFakeBackend("web1", "db1"), nil, func(c *Config) { c.RecordDir = dir; c.Tokens = tf.store })

	code, all := listRecordings(t, e, "/api/recordings", tokAll)
	if code != http.StatusOK || len(all) != 2 {
		t.Fatalf("unlimited token: %d %q, want web1 and db1", code, sessionsOf(all))
	}
	for _, tok := range []string{tokWeb, tokRO} {
		code, list := listRecordings(t, e, "/api/recordings", tok)
		if code != http.StatusOK || sessionsOf(list) != "web1/"+recWeb {
			t.Fatalf("token %.4s: %d %q, want only web1/%s", tok, code, sessionsOf(list), recWeb)
		}
		r := list[0]
		if r.Size != int64(len(web)) || r.Width != 80 || r.Height != 24 || r.Started == nil || r.Started.Unix() != 1 ||
			r.Duration == nil || *r.Duration != 0.5 || r.Live {
			t.Errorf("token %.4s: entry %+v, want size %d, 80x24, started at 1, duration 0.5, not live", tok, r, len(web))
		}
		if code, list := listRecordings(t, e, "/api/recordings?instance=db1", tok); code != http.StatusOK || len(list) != 0 {
			t.Errorf("token %.4s, ?instance=db1: %d %q, want 200 and nothing", tok, code, sessionsOf(list))
		}
	}
	if code, list := listRecordings(t, e, "/api/recordings?instance=db1", tokAll); code != http.StatusOK || sessionsOf(list) != "db1/"+recDB {
		t.Errorf("?instance=db1: %d %q, want db1's only", code, sessionsOf(list))
	}
	if code, _ := listRecordings(t, e, "/api/recordings?instance=../x", tokAll); code != http.StatusBadRequest {
		t.Errorf("?instance=../x: %d, want 400", code)
	}

	// Revoked: the listing goes as the recordings themselves do.
	tf.set(tokAll + " alice")
	if code, list := listRecordings(t, e, "/api/recordings", tokWeb); code != http.StatusUnauthorized {
		t.Errorf("revoked token: %d %q, want 401", code, sessionsOf(list))
	}
	if resp := e.do("GET", "/api/recordings", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no credential: %d, want 401", resp.StatusCode)
	}

	off := newEnv(t, newFakeBackend("web1"), nil, nil)
	resp := off.do("GET", "/api/recordings", bearerHeader(tokAll), nil)
	if msg := body(t, resp); resp.StatusCode != http.StatusNotFound || !strings.Contains(msg, "--record-dir") {
		t.Errorf("recordings off: %d %q, want 404 naming --record-dir", resp.StatusCode, msg)
	}
}

// TestLastEventTime: the duration comes from the last whole event line,
// not one a write has cut short.
func TestLastEventTime(t *testing.T) {
	for in, want := range map[string]float64{
		"[1.5,\"o\",\"a\"]\n[2.25,\"o\",\"b\"]\n":        2.25,
		"[1.5,\"o\",\"a\"]\n[2.25,\"o\",\"b":             1.5,
		"ader\"}\n[0.1,\"r\",\"80x24\"]\n[3,\"o\",\"\"]": 3,
	} {
		if got, ok := lastEventTime([]byte(in)); !ok || got != want {
			t.Errorf("lastEventTime(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if _, ok := lastEventTime([]byte("{\"version\":2}\n")); ok {
		t.Error("a header alone has a last event")
	}
}
