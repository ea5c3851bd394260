package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// markedScript prints "PID MARK ARGS" for every live process of the
// container whose environment holds TERMGATE_SESSION (zombies have an
// empty environment and are left out).
const markedScript = `nl='
'
for d in /proc/[0-9]*; do
	e="$nl$(tr '\0' '\n' <"$d/environ" 2>/dev/null)$nl" || continue
	case "$e" in *"${nl}TERMGATE_SESSION="*) ;; *) continue ;; esac
	m=${e#*"${nl}TERMGATE_SESSION="}
	m=${m%%"$nl"*}
	echo "${d#/proc/} $m $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)"
done`

// markedProc is a live process of a session in a container.
type markedProc struct {
	PID  int
	Mark string // TERMGATE_SESSION: the session's marker
	Args string
}

func (p markedProc) String() string { return fmt.Sprintf("%d[%s] %s", p.PID, p.Mark, p.Args) }

// isShell reports whether the process is a session's shell (every gateway
// runs --shell /bin/sh; jobs are sleeps and loops in it).
func (p markedProc) isShell() bool { return p.Args == soakShell }

func (d *engine) marked(ctx context.Context, name string) ([]markedProc, error) {
	cctx, cancel := context.WithTimeout(ctx, dockerWait)
	defer cancel()
	out, err := d.docker(cctx, "exec", name, "sh", "-c", markedScript)
	if err != nil {
		return nil, err
	}
	return parseMarked(out), nil
}

func parseMarked(out string) []markedProc {
	var ps []markedProc
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		if len(f) < 2 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		p := markedProc{PID: pid, Mark: f[1]}
		if len(f) == 3 {
			p.Args = strings.TrimSpace(f[2])
		}
		ps = append(ps, p)
	}
	return ps
}

// census counts shells and distinct sessions among marked processes.
type census struct {
	Shells   int
	Sessions int
	Procs    []markedProc
}

func takeCensus(ps []markedProc) census {
	c := census{Procs: ps}
	marks := map[string]bool{}
	for _, p := range ps {
		marks[p.Mark] = true
		if p.isShell() {
			c.Shells++
		}
	}
	c.Sessions = len(marks)
	return c
}

// count returns the processes whose args contain s.
func (c census) count(s string) int {
	n := 0
	for _, p := range c.Procs {
		if strings.Contains(p.Args, s) {
			n++
		}
	}
	return n
}

func (c census) String() string {
	var parts []string
	for _, p := range c.Procs {
		parts = append(parts, p.String())
	}
	return fmt.Sprintf("%d shells, %d sessions: %s", c.Shells, c.Sessions, strings.Join(parts, "; "))
}

// waitCensus polls the container until ok(census) or d passes; it returns
// the last census.
func (d *engine) waitCensus(ctx context.Context, name string, wait time.Duration, ok func(census) bool) (census, error) {
	deadline := time.Now().Add(wait)
	for {
		ps, err := d.marked(ctx, name)
		c := takeCensus(ps)
		if err == nil && ok(c) {
			return c, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err != nil {
				return c, err
			}
			return c, fmt.Errorf("%s after %s: %s", name, wait, c)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// localLeftovers lists this host's processes that carry this run's mark
// in their environment (local shells inherit the gateway's), excluding the
// gateways themselves.
func localLeftovers(runID, bin string) []string {
	want := []byte(runEnv + "=" + runID)
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if bytes.HasPrefix(cmd, []byte(bin+"\x00")) {
			continue // a gateway
		}
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(bytes.TrimRight(cmd, "\x00"), []byte{0}, []byte{' '})))
	}
	sort.Strings(out)
	return out
}
