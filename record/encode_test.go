package record

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// encodeChunks runs chunks through an encoder as a recording does and
// parses the lines back with Read (encoding/json underneath).
func encodeChunks(t testing.TB, chunks [][]byte) string {
	var enc encoder
	buf := []byte(`{"version":2,"width":80,"height":24}` + "\n")
	for i, c := range chunks {
		buf = enc.output(buf, time.Duration(i)*time.Millisecond, c)
	}
	buf = enc.flush(buf, time.Duration(len(chunks))*time.Millisecond)
	if !utf8.Valid(buf) {
		t.Fatalf("not UTF-8: %q", buf)
	}
	_, events, err := Read(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("%v in %q", err, buf)
	}
	var out strings.Builder
	for _, ev := range events {
		if ev.Type != "o" {
			t.Fatalf("event type %q", ev.Type)
		}
		out.WriteString(ev.Data)
	}
	return out.String()
}

func TestOutputEscaping(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"controls and quotes", []string{"a\"b\\c\r\n\t\x1b[1m\x00\x7f"}, "a\"b\\c\r\n\t\x1b[1m\x00\x7f"},
		{"a character cut between chunks", []string{"caf\xc3", "\xa9 \xe2\x82", "\xac"}, "café €"},
		{"a cut character at the end", []string{"ok\xe2\x82"}, "ok\ufffd\ufffd"},
		{"invalid bytes", []string{"\xff\xfeA\xc3("}, "\ufffd\ufffdA\ufffd("},
		{"a lone continuation byte", []string{"\xa9", "x"}, "\ufffdx"},
		{"four-byte characters cut twice", []string{"\xf0\x9f", "\x98", "\x80!"}, "😀!"},
		{"U+2028 and U+FFFD stay", []string{"\u2028\ufffd"}, "\u2028\ufffd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var chunks [][]byte
			for _, c := range tc.chunks {
				chunks = append(chunks, []byte(c))
			}
			if got := encodeChunks(t, chunks); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzOutputRoundTrip: whatever bytes the shell prints, cut wherever the
// reads fall, the file is valid JSON text and says what a terminal shows:
// the bytes as UTF-8, each invalid byte as U+FFFD (Go's []rune rule).
func FuzzOutputRoundTrip(f *testing.F) {
	f.Add([]byte("hello\r\n\x1b[31mred\x1b[0m"), []byte{3})
	f.Add([]byte("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), []byte{4, 1, 1, 2})
	f.Add([]byte("\xff\xfe\xc3(\xed\xa0\x80\"\\\x00"), []byte{1, 1, 1})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		var chunks [][]byte
		rest := data
		for _, c := range cuts {
			n := int(c) % (len(rest) + 1)
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		chunks = append(chunks, rest)
		want := string([]rune(string(data)))
		if got := encodeChunks(t, chunks); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
