package record

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

// TestCopyWithoutInput: issue 18 L2. A recording with input, copied for an
// observer, keeps its header, output, resizes and markers byte for byte,
// and loses every input event, however long its lines.
func TestCopyWithoutInput(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Config{Dir: dir, Input: true})
	if err != nil {
		t.Fatal(err)
	}
	obs := r.Observe(sessions.ObservedSession{Instance: "web1", Session: "0c0d", Size: sessions.Size{Cols: 80, Rows: 24}})
	long := strings.Repeat("L", 200<<10) // longer than the copy's buffer
	obs.Output([]byte("Password: "))
	obs.(sessions.InputObserver).Input([]byte("hunter2-SECRET\n"))
	obs.Output([]byte(long))
	obs.(sessions.InputObserver).Input([]byte(long + "TYPED"))
	time.Sleep(5 * time.Millisecond)
	obs.Resize(sessions.Size{Cols: 100, Rows: 30})
	obs.Output([]byte("\r\n$ "))
	obs.Close()
	closeRecorder(t, r)

	whole, err := os.ReadFile(dir + "/web1/0c0d.cast")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n, err := CopyWithoutInput(&out, bytes.NewReader(whole))
	if err != nil || n != int64(out.Len()) {
		t.Fatalf("copy: %d, %v (wrote %d)", n, err, out.Len())
	}
	if bytes.Contains(out.Bytes(), []byte("SECRET")) || bytes.Contains(out.Bytes(), []byte("TYPED")) {
		t.Fatal("the observer's copy holds the input")
	}
	var want []byte
	for _, l := range bytes.SplitAfter(whole, []byte("\n")) {
		if !bytes.Contains(l, []byte(`, "i", `)) {
			want = append(want, l...)
		}
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("the copy is not the recording without its input lines (%d bytes, want %d)", out.Len(), len(want))
	}
	_, evs, err := Read(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got := outputOf(evs); got != "Password: "+long+"\r\n$ " {
		t.Fatalf("the output is not whole: %d bytes", len(got))
	}
}

// FuzzCopyWithoutInput: whatever the file, the copy is made of its lines,
// in order, the first one first, and no other line of it is an input event.
func FuzzCopyWithoutInput(f *testing.F) {
	f.Add([]byte("{\"version\":2}\n[0.1, \"o\", \"a\"]\n[0.2, \"i\", \"pw\"]\n[0.3,\"m\",\"x\"]\n"))
	f.Add([]byte("{}\n[1,\"i\",\"x\"]\n[2, \"r\", \"80x24\"]\nnot json\n[3 ,  \"o\", \"\\n\"]"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		if _, err := CopyWithoutInput(&out, bytes.NewReader(in)); err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(in, []byte("\n"))
		got := bytes.SplitAfter(out.Bytes(), []byte("\n"))
		if len(in) > 0 && !bytes.HasPrefix(out.Bytes(), lines[0]) {
			t.Fatalf("the first line is not kept: %q", out.Bytes())
		}
		j := 0
		for i, l := range got {
			if len(l) == 0 {
				continue
			}
			for j < len(lines) && !bytes.Equal(lines[j], l) {
				j++
			}
			if j == len(lines) {
				t.Fatalf("line %q is not a line of the input, in order", l)
			}
			if i > 0 && isInput(l) {
				t.Fatalf("kept the input event %q", l)
			}
			j++
		}
	})
}

// isInput reports whether line is a JSON array whose second element is
// the string "i".
func isInput(line []byte) bool {
	var ev []json.RawMessage
	if json.Unmarshal(line, &ev) != nil || len(ev) < 2 {
		return false
	}
	var kind string
	return json.Unmarshal(ev[1], &kind) == nil && kind == "i"
}
