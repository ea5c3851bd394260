package procmark

import (
	"strings"
	"testing"
)

// The kill script's output carries command names, which the processes in
// the container choose (cut at their first newline by the script).
func FuzzParseEnded(f *testing.F) {
	f.Add("killed 12 gw1.abc sh\nkilled 13 - sleep\n")
	f.Add("killed 25 s1 x) Z\nkilled 25 s1 again\nkilled x s1 y\nkilled 7\n")
	f.Add("killed 9 s1 \x00\xff)\n\nnoise\nkilled 10 - ")
	// A descendant that cleared its marker and named itself like a
	// stat line (the script's output for it since L1).
	f.Add("killed 40 gw.s1 sh\nkilled 41 - x) Z 1 1 1 1\nkilled 42 - sleep\n")
	f.Fuzz(func(t *testing.T, out string) {
		seen := map[int]bool{}
		for _, e := range ParseEnded(out) {
			if seen[e.PID] {
				t.Fatalf("PID %d reported twice", e.PID)
			}
			seen[e.PID] = true
			if strings.ContainsAny(e.Session, " \n") || strings.Contains(e.Comm, "\n") {
				t.Fatalf("entry %+v spans fields or lines", e)
			}
			if e.Session == "-" {
				t.Fatalf("entry %+v: '-' (no marker) taken for a session", e)
			}
		}
	})
}

func TestParseEndedDuplicatesAndHostileNames(t *testing.T) {
	got := ParseEnded("killed 12 gw1.abc sh -l\nkilled 13 - x) Z\nkilled 12 gw1.abc dup\nnoise\n")
	want := []Ended{{PID: 12, Session: "gw1.abc", Comm: "sh -l"}, {PID: 13, Comm: "x) Z"}}
	if len(got) != len(want) {
		t.Fatalf("ParseEnded = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ParseEnded[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}
