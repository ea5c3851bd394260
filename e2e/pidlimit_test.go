package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// Issue 20, D7: a durable start in a container at its pid limit fails
// (the holder cannot create its threads) with one log line that says why;
// the holder's Go crash output, several KB, goes to the debug level only.
// Once processes are freed the next attach gets a durable session.
func TestDurableStartAtThePidLimit(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{})
	inst := d.runContainer(t, "pids", testImage, "--pids-limit", "12")
	// Fill the container up to its limit (the loop stops when fork fails).
	// The subshell dies when fork fails; the processes it started stay.
	dockerExec(t, inst, "(while :; do sleep 99999 & done) 2>/dev/null; true")

	r := d.ssh(t, keyAdmin, inst, "")
	if r.code == 0 {
		t.Fatalf("attach at the pid limit succeeded: %q", r.stdout)
	}
	// checkLog reports whether a WARN or ERROR line names the instance
	// and its process limit, and fails the test for one that carries the
	// crash output.
	checkLog := func() bool {
		saw := false
		for _, line := range strings.Split(d.logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			level, _ := rec["level"].(string)
			if level != "WARN" && level != "ERROR" {
				continue
			}
			if strings.Contains(line, "goroutine ") || strings.Contains(line, "fatal error") || len(line) > 1500 {
				t.Fatalf("a %s line carries the holder's crash output (%d bytes): %.300s…", level, len(line), line)
			}
			saw = saw || strings.Contains(line, inst) && strings.Contains(line, "process limit")
		}
		return saw
	}
	eventually(t, "a WARN or ERROR line naming "+inst+" and its process limit", checkLog)

	// Room again: a higher limit (no exec runs at the limit), the sleeps gone.
	dockerCLI(t, "update", "--pids-limit", "100", inst)
	dockerExec(t, inst, `for d in /proc/[0-9]*; do
	[ "$(tr '\0' ' ' <$d/cmdline 2>/dev/null)" = "sleep 99999 " ] && kill ${d#/proc/}
done; true`)
	s := d.attach(t, keyAdmin, inst, 80, 24)
	s.roundTrip()
	expectDurable(t, d.gateway, inst, "", true)
}
