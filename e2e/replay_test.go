package e2e

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// Scenario 3: a reattaching client gets at least 10 KiB of replay, cut at
// a clean boundary, ending with the latest output, without the terminal
// queries busybox ash sends at every prompt; a resuming client gets exactly
// what it missed, or the replay and gap:true.
func TestReplay(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{containers: []string{"web-1"}, args: []string{"--replay", "raw"}})
	name := g.name("web-1")

	// 3000 coloured lines of 30 bytes: more than the 64 KiB ring holds, so
	// the replay is cut.
	const lines = 3000
	w := g.ws(t, tokAdmin, name)
	w.send(fmt.Sprintf(`i=0; while [ $i -lt %d ]; do printf '\033[32mline %%04d ✓ ünï\033[0m\n' $i; i=$((i+1)); done`, lines))
	last := fmt.Sprintf("\x1b[32mline %04d ✓ ünï\x1b[0m\r\n", lines-1)
	w.expect(regexp.QuoteMeta(last))
	w.roundTrip()
	w.expect(`\x1b\[6n`) // the prompt after it: the shell is idle now
	live := w.out.Bytes()
	if !bytes.Contains(live, []byte("\x1b[6n")) {
		t.Fatalf("the live output holds no DSR query (ESC[6n): does busybox ash still send one at each prompt? The replay check below needs it")
	}
	closeWS(w)
	g.waitClients(t, name, 0)

	// Resuming from an offset that left the ring gets the normal replay
	// and gap:true; from a buffered one, the bytes from there on (the
	// gateway may leave out terminal queries) and nothing twice.
	info, _ := g.session(t, name)
	end := info.BytesOut // the shell is idle: nothing follows
	gapped := g.wsQuery(t, name, fmt.Sprintf("session=%s&since=0", w.attached.Session))
	if ev := gapped.attached; !ev.Gap || ev.Offset != end {
		t.Errorf("resume from 0, long gone from the ring: %s, want offset %d and gap:true", ev.raw, end)
	}
	gapped.expect(regexp.QuoteMeta(last))
	closeWS(gapped)

	recent := live[bytes.LastIndex(live, []byte(last)):]
	since := end - int64(len(recent))
	resumed := g.wsQuery(t, name, fmt.Sprintf("session=%s&since=%d", w.attached.Session, since))
	if ev := resumed.attached; ev.Gap || ev.Offset != end {
		t.Errorf("resume from %d: %s, want offset %d and no gap", since, ev.raw, end)
	}
	withoutDSR := bytes.ReplaceAll(recent, []byte("\x1b[6n"), nil)
	resumed.expect(`\A(?:` + regexp.QuoteMeta(string(recent)) + `|` + regexp.QuoteMeta(string(withoutDSR)) + `)`)
	echoCmd, echoWord := marker("resumed")
	resumed.send(echoCmd)
	resumed.expect(`\A` + regexp.QuoteMeta(echoCmd)) // live output follows at once
	resumed.expect(regexp.QuoteMeta(echoWord))
	resumed.expect(`\x1b\[6n`) // idle again
	closeWS(resumed)
	g.waitClients(t, name, 0)

	info, _ = g.session(t, name)
	again := g.ws(t, tokAdmin, name)
	if again.attached.Offset != info.BytesOut {
		t.Errorf("reattach: %s, want offset %d (the first byte after the replay)", again.attached.raw, info.BytesOut)
	}
	if again.attached.New {
		t.Fatalf("reattach: %s, want new:false", again.attached.raw)
	}
	// What arrives before the echo of a line typed now is the replay:
	// the replay is sent before any live output.
	again.expect(regexp.QuoteMeta(last))
	cmd, word := marker("after")
	again.send(cmd)
	again.expect(regexp.QuoteMeta(word))
	out := again.out.Bytes()
	echo := bytes.Index(out, []byte(cmd[:len(cmd)-len("$((40+2))")]))
	if echo < 0 {
		t.Fatalf("the echo of %q is not in the output %q", cmd, out)
	}
	replay := out[:echo]

	if len(replay) < 10<<10 {
		t.Errorf("the replay holds %d bytes, want at least 10 KiB", len(replay))
	}
	if len(replay) > 0 && !utf8.RuneStart(replay[0]) {
		t.Errorf("the replay begins inside a UTF-8 sequence: % x", replay[:min(16, len(replay))])
	}
	if !bytes.HasPrefix(replay, []byte("\x1b[32mline ")) {
		t.Errorf("the replay does not begin at a line start: %q…", replay[:min(40, len(replay))])
	}
	if bytes.Contains(replay, []byte("\x1b[6n")) {
		t.Errorf("the replay holds a DSR query (ESC[6n): the client's terminal would answer it into the shell")
	}
	if !utf8.Valid(replay) {
		t.Errorf("the replay is not valid UTF-8")
	}
	// Every line in it is whole and in order, up to the last one.
	all := regexp.MustCompile(`\x1b\[32mline (\d{4}) ✓ ünï\x1b\[0m\r\n`).FindAllSubmatch(replay, -1)
	if len(all) == 0 {
		t.Fatalf("no complete line in the replay %q", replay)
	}
	first := atoi(t, string(all[0][1]))
	for i, m := range all {
		if got := atoi(t, string(m[1])); got != first+i {
			t.Fatalf("replay line %d is number %d, want %d", i, got, first+i)
		}
	}
	if got := atoi(t, string(all[len(all)-1][1])); got != lines-1 {
		t.Errorf("the replay's last line is number %d, want %d", got, lines-1)
	}
	tail := replay[bytes.LastIndex(replay, []byte(last))+len(last):]
	if strings.Contains(string(tail), "line ") {
		t.Errorf("after the last line the replay holds %q, want only the prompt", tail)
	}
	t.Logf("replay: %d bytes, lines %d..%d, tail %q", len(replay), first, lines-1, tail)
}
