package matrix

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// column is one way a session is held: a backend, ordinary or durable.
type column struct {
	e       engine
	durable bool
	p       *proxy
	g       *gateway
}

func (c *column) String() string {
	if c.durable {
		return c.e.name() + "/durable"
	}
	return c.e.name() + "/ordinary"
}

// tag tells the column's instances apart from the other column's of the
// same engine.
func (c *column) tag() string {
	if c.durable {
		return "d"
	}
	return "o"
}

// row is one way a session or a stream ends.
type row struct {
	name string
	cell func(t *testing.T, c *column, inst string)
}

var rows = []row{
	{"shell exits", func(t *testing.T, c *column, inst string) { shellEnds(t, c, inst, "exit", 0) }},
	{"exits with a job holding the terminal", func(t *testing.T, c *column, inst string) {
		shellEnds(t, c, inst, "(while true; do sleep 1; done) & echo job=$!; exit", 0)
	}},
	{"exit code 3", func(t *testing.T, c *column, inst string) { shellEnds(t, c, inst, "exit 3", 3) }},
	{"target closes a forward first", targetCloses},
	{"client half-closes first", clientHalfCloses},
	{"client stalls 20s and resumes", clientStalls},
}

// TestEndings is the matrix of package doc.go: each column's cells run in
// parallel, each in an instance of its own; the engine row runs last, as
// it cuts the column's gateway off its engine.
func TestEndings(t *testing.T) {
	run := randomHex(3)
	var columns []*column
	d := &dockerEngine{run0: run, label: "termgate.matrix=" + run}
	columns = append(columns, &column{e: d}, &column{e: d, durable: true})
	kc := kubeconfig()
	k := &kubeEngine{run0: run, ns: "tgmatrix-" + run, label: "termgate.matrix=" + run, kubeconfig: kc,
		server: apiServer(kc), ready: make(chan struct{})}
	columns = append(columns, &column{e: k}, &column{e: k, durable: true})
	columns = append(columns, &column{e: &localEngine{run0: run}})

	for _, c := range columns {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			switch c.e.(type) {
			case *dockerEngine:
				need(t, "the Docker engine (with termgate-test:busybox: make test-image)", "TERMGATE_REQUIRE_DOCKER", dockerHere())
			case *kubeEngine:
				need(t, "the Kubernetes cluster "+kc, "TERMGATE_REQUIRE_KUBERNETES", kubeHere(kc))
				if !c.durable { // one namespace for both Kubernetes columns
					k.setup(t)
				} else {
					k.waitSetup(t)
				}
			}
			c.p = c.e.proxy(t)
			var extra []string
			if c.durable {
				extra = append(extra, "--durable")
			}
			c.g = startGateway(t, c.e, c.p, extra...)
			t.Run("streams", func(t *testing.T) {
				for i, r := range rows {
					t.Run(r.name, func(t *testing.T) {
						t.Parallel()
						r.cell(t, c, c.e.instance(t, fmt.Sprintf("%s%d", c.tag(), i)))
					})
				}
			})
			if c.p != nil {
				t.Run("engine unreachable then back", func(t *testing.T) { engineBack(t, c, c.e.instance(t, c.tag()+"engine")) })
			}
		})
	}
}

// setup makes the run's namespace, deleted at the end, and then lets the
// other Kubernetes column go on (waitSetup).
func (k *kubeEngine) setup(t *testing.T) {
	defer close(k.ready)
	commandT(t, "kubectl", "--kubeconfig", k.kubeconfig, "create", "namespace", k.ns)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_, _ = command(ctx, "kubectl", "--kubeconfig", k.kubeconfig, "delete", "namespace", k.ns, "--wait=false")
	})
	k.made = true
}

func (k *kubeEngine) waitSetup(t *testing.T) {
	select {
	case <-k.ready:
	case <-time.After(waitFor):
		t.Fatalf("namespace %s never made", k.ns)
	}
	if !k.made {
		t.Fatalf("namespace %s could not be made (the other Kubernetes column says why)", k.ns)
	}
}

// apiServer is the host:port of the kubeconfig's https server.
func apiServer(kubeconfig string) string {
	b, err := os.ReadFile(kubeconfig)
	if err != nil {
		return ""
	}
	m := regexp.MustCompile(`(?m)^\s*server:\s*https://([^\s/]+)`).FindStringSubmatch(string(b))
	if m == nil {
		return ""
	}
	return m[1]
}

// attach starts ssh -tt into inst and returns it with its shell's PID.
func (c *column) attach(t *testing.T, inst string) (*sshRun, int) {
	t.Helper()
	r := c.g.ssh(t, "-tt", inst+"@127.0.0.1")
	_, _ = io.WriteString(r.stdin, "echo shell=$$\n")
	pid, _ := strconv.Atoi(r.expect(t, `shell=(\d+)`)[1])
	return r, pid
}

// shellEnds: the shell runs script, which ends it with code: the SSH
// client exits with the code, the WebSocket client gets the exit event,
// and nothing the session started is left in the instance.
func shellEnds(t *testing.T, c *column, inst, script string, code int) {
	w := c.g.ws(t, inst, 0)
	r, shell := c.attach(t, inst)
	pids := []int{shell}
	_, _ = io.WriteString(r.stdin, script+"\n")
	if strings.Contains(script, "job=") {
		job, _ := strconv.Atoi(r.expect(t, `job=(\d+)`)[1])
		pids = append(pids, job)
	}
	if got := r.exit(t); got != code {
		t.Errorf("ssh exited with %d, want %d; stderr %q", got, code, r.errOut.String())
	}
	for {
		ev := w.event()
		if ev["type"] == "exit" {
			if got, _ := ev["code"].(float64); int(got) != code {
				t.Errorf("websocket exit event %v, want code %d", ev, code)
			}
			break
		}
	}
	expectNothingLeft(t, c, inst, pids)
}

// expectNothingLeft waits until nothing a session started is left in inst.
func expectNothingLeft(t *testing.T, c *column, inst string, pids []int) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		left := c.e.left(t, inst, pids)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left in %s %s after the session ended:\n%s", c, inst, strings.Join(left, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readToEOF reads f until EOF, at most waitFor.
func readToEOF(t *testing.T, f *os.File) string {
	t.Helper()
	_ = f.SetReadDeadline(time.Now().Add(waitFor))
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read the forward to its end: %v (got %q): the target's close never reached the client", err, b)
	}
	return string(b)
}

// targetCloses: the service in the instance answers and closes first;
// the client reads the answer and then EOF while its own side is open.
func targetCloses(t *testing.T, c *column, inst string) {
	addr := c.e.listen(t, inst, 7001, "printf hello-from-target")
	r, out := c.g.sshW(t, addr, inst)
	if got := readToEOF(t, out); got != "hello-from-target" {
		t.Errorf("forward read %q, want hello-from-target", got)
	}
	_ = r.stdin.Close()
	if code := r.exit(t); code != 0 {
		t.Errorf("ssh -W exited with %d; stderr %q", code, r.errOut.String())
	}
}

// clientHalfCloses: the client sends and half-closes; the service reads
// to EOF, answers and closes; the client gets the answer.
func clientHalfCloses(t *testing.T, c *column, inst string) {
	addr := c.e.listen(t, inst, 7002, "wc -c")
	r, out := c.g.sshW(t, addr, inst)
	_, _ = io.WriteString(r.stdin, "12345")
	_ = r.stdin.Close()
	if got := strings.TrimSpace(readToEOF(t, out)); got != "5" {
		t.Errorf("forward read %q, want 5 (the service saw the client's EOF)", got)
	}
	if code := r.exit(t); code != 0 {
		t.Errorf("ssh -W exited with %d; stderr %q", code, r.errOut.String())
	}
}

// clientStalls: while the shell prints 4 MB, an ssh stopped with SIGSTOP
// and a WebSocket client that reads nothing stay away 20 s; both are
// still attached when they read again, and live.
func clientStalls(t *testing.T, c *column, inst string) {
	w := c.g.ws(t, inst, 4096)
	r, _ := c.attach(t, inst)
	w.until(`shell=\d+`)
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	w.send("yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz | head -c 4000000; echo flood-$((6*7))\r")
	time.Sleep(20 * time.Second) // the stall itself
	if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	w.until(`flood-42`)
	w.send("echo alive-$((6*7))\r")
	w.until(`alive-42`)
	r.expect(t, `flood-42`)
	_, _ = io.WriteString(r.stdin, "echo sshalive-$((6*7))\n")
	r.expect(t, `sshalive-42`)
}

// engineBack: the gateway loses its engine under an attached client, and
// gets it back. The client is told and let go; a new attach works; a
// durable session is the same shell, an ordinary one a new shell with
// the old one ended.
func engineBack(t *testing.T, c *column, inst string) {
	r, shell := c.attach(t, inst)
	c.p.cutOff()
	r.exit(t)
	if !strings.Contains(r.out.String()+r.errOut.String(), "[termgate]") {
		t.Errorf("the client was not told why it was let go; it printed %q; stderr %q", r.out.String(), r.errOut.String())
	}
	c.p.restore()
	deadline := time.Now().Add(waitFor)
	var again *sshRun
	var pid int
	for {
		again = c.g.ssh(t, "-tt", inst+"@127.0.0.1")
		_, _ = io.WriteString(again.stdin, "echo shell=$$\n")
		if m, _ := again.out.WaitFor(regexp.MustCompile(`shell=(\d+)`), 0, 5*time.Second); m != nil {
			pid, _ = strconv.Atoi(m[1])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no attach worked after the engine came back; the last printed %q; stderr %q", again.out.String(), again.errOut.String())
		}
	}
	switch {
	case c.durable && pid != shell:
		t.Errorf("after the engine came back the durable session's shell is %d, want %d (the holder kept it)", pid, shell)
	case !c.durable && pid == shell:
		t.Errorf("after the engine came back the ordinary session still has shell %d", shell)
	case !c.durable:
		deadline := time.Now().Add(waitFor)
		for {
			if _, err := c.e.run(t, inst, fmt.Sprintf("kill -0 %d", shell)); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the old shell %d is still running in %s", shell, inst)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
