package holder

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A shell that exits while a background job holds its terminal open ends
// the session all the same (contract, session semantics 7): the gateway
// gets what the shell printed, then the exit status; the job is killed
// and the holder exits.
func TestShellExitWithAJobHoldingTheTerminal(t *testing.T) {
	for _, c := range []struct {
		name, job string
	}{
		{"background job", "(while true; do sleep 1; done) &"},
		{"setsid job", "setsid sh -c 'while true; do sleep 1; done' &"},
		{"nohup job", "nohup sh -c 'while true; do sleep 1; done' >/dev/null 2>&1 &"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.HasPrefix(c.job, "setsid") && !onPath("setsid") {
				t.Skip("no setsid on this host")
			}
			sock, stopped := startHolder(t, time.Minute)
			a := dial(t, sock, Version)
			a.attach(AttachMsg{})
			a.input(c.job + " echo job=$! st\"\"arted\n")
			a.until(" started\r\n")
			out := a.out.String()
			job, err := strconv.Atoi(strings.Fields(out[strings.LastIndex(out, "job=")+4:])[0])
			if err != nil {
				t.Fatalf("no job pid in %q", out)
			}
			a.input("echo good\"\"bye; exit 3\n")
			a.until("goodbye\r\n")
			if code := untilExit(t, a); code != 3 {
				t.Fatalf("exit code %d, want 3", code)
			}
			select {
			case err := <-stopped:
				if err != nil {
					t.Fatalf("holder ended with %v, want nil after the shell exited", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the holder did not end after its shell exited")
			}
			deadline := time.Now().Add(5 * time.Second)
			for processExists(job) && !isZombie(job) {
				if time.Now().After(deadline) {
					t.Fatalf("background job %d survived the shell's exit", job)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// A process the kill cannot find that holds the terminal open (it opened
// it by name) keeps the session no longer than jobGrace.
func TestShellExitWithAStrangerHoldingTheTerminal(t *testing.T) {
	old := jobGrace
	jobGrace = 200 * time.Millisecond
	t.Cleanup(func() { jobGrace = old })
	sock, stopped := startHolder(t, time.Minute)
	a := dial(t, sock, Version)
	a.attach(AttachMsg{})
	a.input("tty; echo do\"\"ne\n")
	a.until("done\r\n")
	out := a.out.String()
	i := strings.Index(out, "/dev/")
	if i < 0 {
		t.Fatalf("no terminal name in %q", out)
	}
	name := strings.Fields(out[i:])[0]
	f, err := os.OpenFile(name, os.O_RDWR, 0) // a stranger: this test process
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a.input("exit 4\n")
	if code := untilExit(t, a); code != 4 {
		t.Fatalf("exit code %d, want 4", code)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not end after its shell exited")
	}
}

// untilExit reads frames until the exit and returns its code.
func untilExit(t *testing.T, g *gw) int {
	t.Helper()
	for {
		f := g.next()
		if f.Type != TypeExit {
			continue
		}
		var m ExitMsg
		if err := DecodeControl(f, &m); err != nil {
			t.Fatal(err)
		}
		return m.Code
	}
}

func onPath(name string) bool {
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		if _, err := os.Stat(dir + "/" + name); err == nil {
			return true
		}
	}
	return false
}
