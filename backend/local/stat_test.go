package local

import (
	"fmt"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     stat
		ok       bool
	}{
		{"plain", "4242 (bash) S 1 4242 4242 34816 4242 4194560 1 0 0 0\n", stat{'S', 4242}, true},
		{"spaces and parentheses", "77 (a (b) c) R 1 70 70 0 -1\n", stat{'R', 70}, true},
		// A process may write its own name: it must not pass for another
		// session's member, nor for a zombie (issue 9 item 8).
		{"forged session", "90 (x) S 0 0 20\n) S 1 90 90 0 -1 4194560\n", stat{'S', 90}, true},
		{"forged zombie", "91 (x) Z\n) S 1 91 91 0 -1\n", stat{'S', 91}, true},
		{"zombie", "92 (sleep) Z 1 92 92 0 -1\n", stat{'Z', 92}, true},
		{"no parenthesis", "93 sleep S 1 93 93\n", stat{}, false},
		{"cut short", "94 (sleep) S 1 94\n", stat{}, false},
		{"not a number", "95 (sleep) S 1 95 x\n", stat{}, false},
		{"empty", "", stat{}, false},
	} {
		got, ok := parseStat([]byte(tc.in))
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: parseStat(%q) = %+v, %v; want %+v, %v", tc.name, tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if (stat{state: 'Z'}).live() || (stat{state: 'X'}).live() || !(stat{state: 'D'}).live() {
		t.Error("live: zombies and dead processes are not live, the others are")
	}
}

// FuzzParseStat: whatever a process names itself, the session id and state
// read back are the kernel's.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("bash"), byte('S'), 4242)
	f.Add([]byte("x) S 0 0 20\n"), byte('R'), 1)
	f.Add([]byte("x) Z"), byte('D'), 32768)
	f.Fuzz(func(t *testing.T, comm []byte, state byte, sid int) {
		if state <= ' ' || state == ')' || state >= 0x7f || sid < 0 {
			t.Skip("not a state or session id the kernel prints")
		}
		line := fmt.Sprintf("123 (%s) %c 1 %d %d 34816 -1 4194560 0 0\n", comm, state, sid, sid)
		got, ok := parseStat([]byte(line))
		if !ok || got.state != state || got.sid != sid {
			t.Fatalf("parseStat(%q) = %+v, %v; want state %c, session %d", line, got, ok, state, sid)
		}
		parseStat(comm) // arbitrary bytes: no panic
	})
}
