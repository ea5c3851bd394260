package audit

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestEventsAreJSONLinesWithWhoWhereWhat(t *testing.T) {
	var buf bytes.Buffer
	a := New(&buf)
	a.Event(AuthFailure, Who{Via: "ssh", Key: "SHA256:abc", Remote: "10.0.0.9:5555"}, "", "", "reason", "unknown key")
	a.Event(Reset, Who{Via: "http", Name: "ci", Remote: "127.0.0.1:1"}, "web1", "s2", "old_session", "s1")
	var nilLog *Log
	nilLog.Event(Attach, Who{}, "x", "y") // a nil Log discards

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	var first, second map[string]any
	if err := json.Unmarshal(lines[0], &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &second); err != nil {
		t.Fatal(err)
	}
	if first["event"] != AuthFailure || first["key"] != "SHA256:abc" || first["remote"] != "10.0.0.9:5555" || first["level"] != "WARN" || first["reason"] != "unknown key" {
		t.Errorf("auth failure record %v", first)
	}
	if second["event"] != Reset || second["who"] != "ci" || second["instance"] != "web1" || second["session"] != "s2" || second["old_session"] != "s1" || second["time"] == nil {
		t.Errorf("reset record %v", second)
	}
}
