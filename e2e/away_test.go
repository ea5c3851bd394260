package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// bashMarks turns on OSC 133 prompt marks in bash with the README's
// lines: A and B around the prompt, C when a command starts (PS0), D with
// its exit status before the next prompt (PROMPT_COMMAND).
const bashMarks = `PROMPT_COMMAND='printf "\033]133;D;%s\007" "$?"'${PROMPT_COMMAND:+"; $PROMPT_COMMAND"}; ` +
	`PS0='\033]133;C\007'; ` +
	`PS1='\[\033]133;A\007\]'"$PS1"'\[\033]133;B\007\]'`

// runGlibcInstance starts a container of the glibc image (bash) as one of
// g's instances; g's cleanup removes it.
func runGlibcInstance(t *testing.T, g *gateway, suffix string) string {
	t.Helper()
	needGlibcImage(t)
	name := g.name(suffix)
	g.mu.Lock()
	g.containers = append(g.containers, name)
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := docker(ctx, "run", "-d", "--init", "--network", "none",
		"--label", "tge2e", "--label", g.label, "--name", name, glibcImage); err != nil {
		t.Fatal(err)
	}
	return name
}

// While you were away (issue 23, item 4), with bash marking its prompts:
// admin detaches, another key runs two commands (one failing), admin's
// return over SSH gets the summary with both exit statuses after the
// redraw, ssh HOST log prints what went by, and the same person coming
// back over a WebSocket gets the away event.
func TestAwaySummaryWithBash(t *testing.T) {
	t.Parallel()
	g := newGateway(t, options{})
	name := runGlibcInstance(t, g, "web-away")

	a := g.attach(t, keyAdmin, name, 100, 30)
	a.send(bashMarks)
	a.roundTrip()
	// The marker's D mark and the next prompt (A, B) come after its
	// output: wait for them, or a quick detach leaves before the marker's
	// command ends and the summary counts it as finished while away.
	a.expect(`\x1b\]133;B\x07`)
	a.close()
	g.waitClients(t, name, 0)

	w := g.attach(t, keyWeb, name, 100, 30)
	w.send(`echo built-$((40+2))`)
	w.expect(`built-42`)
	w.send(`sh -c 'exit 3'`)
	w.expect(`\x1b\]133;D;3\x07`)

	back := g.attach(t, keyAdmin, name, 100, 30)
	back.expect(regexp.QuoteMeta(`[termgate] away `) + `\d+s: [\d.]+ [KM]?B of output, 2 commands finished: ` +
		regexp.QuoteMeta(`echo built-$((40+2)) (exit 0), sh -c 'exit 3' (exit 3)`) + "\r\n")

	r := g.ssh(t, keyAdmin, "termgate", "log "+name)
	if r.code != 0 || !strings.Contains(r.stdout, "built-42") || !strings.Contains(r.stderr, "since you left") {
		t.Fatalf("log: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := g.ssh(t, keyWeb, "termgate", "log "+g.name("db-1")); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("log of an instance outside the key's instances=: status %d, stderr %q", r.code, r.stderr)
	}

	back.close()
	g.waitClients(t, name, 1)
	w.send(`false`)
	w.expect(`\x1b\]133;D;1\x07`)
	ws := g.ws(t, tokAdmin, name) // the admin token is the same person as the admin key
	defer closeWS(ws)
	for {
		ev := ws.nextEvent()
		if ev.Type != "away" {
			continue
		}
		var away struct {
			Finished int `json:"finished"`
			Commands []struct {
				Command string `json:"command"`
				Exit    *int   `json:"exit"`
			} `json:"commands"`
		}
		if err := json.Unmarshal([]byte(ev.raw), &away); err != nil {
			t.Fatal(err)
		}
		if away.Finished != 1 || len(away.Commands) != 1 || away.Commands[0].Command != "false" || away.Commands[0].Exit == nil || *away.Commands[0].Exit != 1 {
			t.Fatalf("away event %s, want one command, false, exit 1", ev.raw)
		}
		break
	}
}
