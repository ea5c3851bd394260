package websock

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/termgate/termgate/sessions"
)

func TestParseControl(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want control
		err  string // substring of the error; empty: valid
	}{
		{in: `{"type":"reset"}`, want: control{Type: ctlReset}},
		{in: ` {"type":"reset","extra":[1,2]} `, want: control{Type: ctlReset}},
		{in: `{"type":"resize","cols":80,"rows":24}`, want: control{Type: ctlResize, Size: sessions.Size{Cols: 80, Rows: 24}}},
		{in: `{"type":"resize","cols":1,"rows":1000}`, want: control{Type: ctlResize, Size: sessions.Size{Cols: 1, Rows: 1000}}},
		{in: `{"type":"resize","cols":0,"rows":24}`, err: "0x24 is out of range"},
		{in: `{"type":"resize","cols":100000,"rows":100000}`, err: "out of range"},
		{in: `{"type":"resize","cols":-5,"rows":24}`, err: "out of range"},
		{in: `{"type":"resize","cols":80.5,"rows":24}`, err: `"cols" must be an integer`},
		{in: `{"type":"resize","cols":"80","rows":24}`, err: `"cols" must be an integer`},
		{in: `{"type":"resize","cols":1e400,"rows":24}`, err: `"cols" must be an integer`},
		{in: `{"type":"resize","rows":24}`, err: `needs "cols" and "rows"`},
		{in: `{"type":"resize","cols":null,"rows":24}`, err: `needs "cols" and "rows"`},
		{in: `{"type":"nope"}`, err: `unknown control message type "nope"`},
		{in: `{"type":""}`, err: "unknown control message type"},
		{in: `{"type":7}`, err: `"type" must be a string`},
		{in: `{}`, err: `"type" is missing`},
		{in: `null`, err: `"type" is missing`},
		{in: `[]`, err: "a JSON object is expected"},
		{in: `"reset"`, err: "a JSON object is expected"},
		{in: `{bad`, err: "invalid JSON"},
		{in: ``, err: "invalid JSON"},
		{in: `{"type":"reset"}{"type":"reset"}`, err: "invalid JSON"},
		{in: `{"type":"reset"} x`, err: "invalid JSON"},
	} {
		got, err := parseControl([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.err == "" && got != tc.want:
			t.Errorf("%s: %+v, want %+v", tc.in, got, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.in, err, tc.err)
		}
	}
}

func TestParseControlErrorsDoNotEchoInput(t *testing.T) {
	long := strings.Repeat("A", 10000)
	_, err := parseControl([]byte(`{"type":"` + long + `"}`))
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("error of %d bytes", len(err.Error()))
	}
}

func FuzzParseControl(f *testing.F) {
	for _, s := range []string{
		`{"type":"reset"}`,
		`{"type":"resize","cols":80,"rows":24}`,
		`{"type":"resize","cols":1000,"rows":1}`,
		`{"type":"resize","cols":100000,"rows":100000}`,
		`{"type":"resize","cols":-1,"rows":24.5}`,
		`{"type":"nope"}`,
		`{"TYPE":"reset"}`,
		`{"type":"resize","cols":80,"rows":24,"cols":0}`,
		`{bad`,
		`[]`,
		`null`,
		"{\"type\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseControl(data)
		if err != nil {
			if got != (control{}) {
				t.Fatalf("error %v with a result %+v", err, got)
			}
			if len(err.Error()) > 300 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		switch got.Type {
		case ctlReset:
			if got.Size != (sessions.Size{}) {
				t.Fatalf("reset with a size: %+v", got)
			}
		case ctlResize:
			if !got.Size.Valid() {
				t.Fatalf("accepted size %+v", got.Size)
			}
		default:
			t.Fatalf("accepted type %q", got.Type)
		}
		// What parses is JSON, and its canonical form parses the same.
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var canon []byte
		if got.Type == ctlResize {
			canon, _ = json.Marshal(map[string]any{"type": got.Type, "cols": got.Size.Cols, "rows": got.Size.Rows})
		} else {
			canon, _ = json.Marshal(map[string]any{"type": got.Type})
		}
		again, err := parseControl(canon)
		if err != nil || again != got {
			t.Fatalf("canonical form %s parses as %+v, %v; want %+v", canon, again, err, got)
		}
	})
}
