package sshd

import (
	"bytes"
	"testing"
)

func TestEscScanner(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		out    string
		detach bool
	}{
		{"at the very start", []string{"~."}, "", true},
		{"after Enter", []string{"ls\r", "~", "."}, "ls\r", true},
		{"after a cursor position report", []string{"\r", "\x1b[24;3R", "~."}, "\r\x1b[24;3R", true},
		{"report split across reads", []string{"\r\x1b[2", "4;3R~", "."}, "\r\x1b[24;3R", true},
		{"after an OSC answer", []string{"\n\x1b]11;rgb:0000/0000/0000\x1b\\~."}, "\n\x1b]11;rgb:0000/0000/0000\x1b\\", true},
		{"mid-line", []string{"echo ~."}, "echo ~.", false},
		{"~~ sends one ~", []string{"\r~~."}, "\r~.", false},
		{"~ then another key", []string{"\r~", "x"}, "\r~x", false},
		{"~ then Enter", []string{"\r~\r~."}, "\r~\r", true},
		{"an arrow key is typing", []string{"\r\x1b[A~."}, "\r\x1b[A~.", false},
		{"Alt-x is typing", []string{"\r\x1bx~."}, "\r\x1bx~.", false},
		{"what follows ~. is dropped", []string{"\r~.rm -rf /\r"}, "\r", true},
		{"a long sequence is no report", []string{"\r\x1b[" + string(bytes.Repeat([]byte("1;"), 40)) + "R~."}, "\r\x1b[" + string(bytes.Repeat([]byte("1;"), 40)) + "R~.", false},
		{"a held ~ waits", []string{"\r~"}, "\r", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEscScanner()
			var out []byte
			detached := false
			for _, c := range tc.chunks {
				var d bool
				out, d = e.feed(out, []byte(c))
				if d {
					detached = true
					break
				}
			}
			if string(out) != tc.out || detached != tc.detach {
				t.Fatalf("out %q detach %v, want %q %v", out, detached, tc.out, tc.detach)
			}
		})
	}
}

// FuzzEscScanner: whatever a client sends, the scanner passes every byte
// on in order except a ~ at the start of a line (held, or one of ~~), and
// detaches only on a ~. it was given.
func FuzzEscScanner(f *testing.F) {
	for _, s := range []string{"~.", "ls\r~.", "\r\x1b[1;1R~.", "a~~b", "\r~~\r~x", "\x1b]0;t\x07~."} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		e := newEscScanner()
		var out []byte
		n := max(int(split), 1)
		detached := false
		for i := 0; i < len(in) && !detached; i += n {
			out, detached = e.feed(out, in[i:min(i+n, len(in))])
		}
		if detached && !bytes.Contains(in, []byte("~.")) {
			t.Fatalf("detached on %q without a ~.", in)
		}
		// Removing ~ bytes from both sides, what is left of the output
		// is a prefix of what is left of the input.
		strip := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("~"), nil) }
		if !bytes.HasPrefix(strip(in), strip(out)) {
			t.Fatalf("output %q is not the input %q in order", out, in)
		}
		if !detached && len(strip(out)) != len(strip(in)) {
			t.Fatalf("bytes lost without a detach: %q from %q", out, in)
		}
		if c := bytes.Count(out, []byte("~")); c > bytes.Count(in, []byte("~")) {
			t.Fatalf("more ~ out (%d) than in: %q from %q", c, out, in)
		}
	})
}
