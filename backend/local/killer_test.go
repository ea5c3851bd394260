package local

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKillSparesOtherSessions: a process that renames itself so that its
// stat line starts like another session's member (or a zombie's) is killed
// with its own session, and not with the other one.
func TestKillSparesOtherSessions(t *testing.T) {
	b := New(Config{})
	t.Cleanup(b.Close)
	a := startBash(t, b, "a")
	v := startBash(t, b, "b")
	sidA, sidB := a.cmd.Process.Pid, v.cmd.Process.Pid

	// Two background jobs in b: one claims a's session, one claims to be a
	// zombie. comm holds 15 bytes: "x) S 1 1 32768\n" fits any pid here.
	io.WriteString(v, `sh -c 'printf "x) S 1 1 `+strconv.Itoa(sidA)+`\n" > /proc/$$/comm; while :; do sleep 1; done' & J1=$!; sh -c 'printf "x) Z 1 1 1\n" > /proc/$$/comm; while :; do sleep 1; done' & J2=$!; sleep 0.2; echo FORGED-$((1+1)) $J1 $J2`+"\n")
	m := readUntil(t, v, regexp.MustCompile(`FORGED-2 (\d+) (\d+)`))
	jobs := m[1:]
	for _, j := range jobs {
		if stat, _ := os.ReadFile("/proc/" + j + "/stat"); !bytes.HasPrefix(stat, []byte(j+" (x) ")) {
			t.Fatalf("job %s did not rename itself: %q", j, stat)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if live := liveInSessions(t, []int{sidA}); len(live) > 0 {
		t.Errorf("session a still holds %q after Kill", live)
	}
	after := strings.Join(liveInSessions(t, []int{sidB}), "\n") + "\n"
	for _, j := range jobs {
		if !strings.Contains("\n"+after, "\n"+j+" ") {
			t.Errorf("killing session a killed job %s of b; b holds:\n%s", j, after)
		}
	}
	if err := v.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if live := liveInSessions(t, []int{sidB}); len(live) > 0 {
		t.Errorf("a renamed job escaped its session's Kill: %q", live)
	}
}
