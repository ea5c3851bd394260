package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Durable sessions (issue 7, contract "Durable sessions"): with --durable
// the shell is held inside its instance and outlives the gateway process.
// Every scenario runs the real gateway binary against the real engine with
// real SSH and WebSocket clients.

// A crash (SIGKILL) with an SSH and a WebSocket client attached and output
// streaming: the next gateway on the same state directory puts a reattaching
// client into the same shell (same PID, its background job alive), and the
// WebSocket client resuming with session and since from before the crash
// gets exactly the bytes it missed: no gap, every numbered line once.
func TestDurableSurvivesKill9(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-1"}})
	name := d.name("web-1")

	s := d.attach(t, keyAdmin, name, 100, 30)
	pid := s.pid()
	s.send("sleep 1001 &")
	s.roundTrip()
	w := d.ws(t, tokAdmin, name)
	session := w.attached.Session
	expectDurable(t, d.gateway, name, session, true)

	// Lines keep coming while no gateway runs: the holder buffers them.
	const lines = 250
	loop, end := numbered(lines, "0.02")
	s.send(loop)
	w.expect(`N00020N`)
	d.kill9(t)
	w.waitClosed()
	_ = s.wait() // the connection is gone: how it ended does not matter
	since := resumeFrom(t, w)
	before := w.out.Bytes()
	time.Sleep(time.Second)
	if !shellAlive(t, name, pid) {
		t.Fatalf("after the gateway was killed, shell %d is gone from %s: %v", pid, name, processes(t, name))
	}

	d.restart(t)
	resumed := d.wsQuery(t, name, fmt.Sprintf("session=%s&since=%d", session, since))
	if ev := resumed.attached; ev.Session != session || ev.Gap || ev.New {
		t.Errorf("resume from %d after the crash: %s, want session %s, new:false, gap:false", since, ev.raw, session)
	}
	resumed.expect(regexp.QuoteMeta(end))
	checkNumbered(t, append(append([]byte(nil), before...), resumed.out.Bytes()...), lines)
	if got := numberedLine.FindAllSubmatch(resumed.out.Bytes(), -1); len(got) == 0 {
		t.Errorf("the resumed client got no numbered line: the crash came after the loop ended, the test proves nothing")
	}

	again := d.attach(t, keyAdmin, name, 100, 30)
	again.expect(regexp.QuoteMeta(end)) // the replay
	if got := again.pid(); got != pid {
		t.Fatalf("after the crash and a restart the shell is %d, want %d (the same shell)", got, pid)
	}
	again.send("jobs")
	again.expect(`sleep 1001`)
	expectJob(t, name, "sleep 1001")
	expectDurable(t, d.gateway, name, session, true)
}

// SIGTERM of a --durable gateway: the WebSocket client gets close 1012
// (service restart), the SSH client a [termgate] notice, the gateway exits
// within 10 s, and the shells keep running; after a restart both land in
// the same shell.
func TestDurableSIGTERMLeavesShellsRunning(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-1"}})
	name := d.name("web-1")

	s := d.attach(t, keyAdmin, name, 80, 24)
	pid := s.pid()
	s.send("sleep 1002 &")
	s.roundTrip()
	w := d.ws(t, tokAdmin, name)
	session := w.attached.Session

	took := d.sigterm(t) // reports an exit later than 10 s or unclean
	t.Logf("the gateway exited %s after SIGTERM", took.Round(time.Millisecond))
	if code := w.waitClosed(); code != 1012 {
		t.Errorf("the WebSocket ended with close code %d (%v), want 1012 (service restart)", code, w.readErr)
	}
	_ = s.wait()
	if !regexp.MustCompile(`\[termgate\]`).MatchString(anyNotice(s)) {
		t.Errorf("the SSH client got no [termgate] notice of the restart; stderr %q, stdout %q", s.errOut, s.out.String()[s.seen:])
	}
	if !shellAlive(t, name, pid) {
		t.Fatalf("after SIGTERM of a --durable gateway, shell %d is gone from %s: %v", pid, name, processes(t, name))
	}
	expectJob(t, name, "sleep 1002")

	d.restart(t)
	again := d.attach(t, keyAdmin, name, 80, 24)
	if got := again.pid(); got != pid {
		t.Fatalf("after SIGTERM and a restart the shell is %d, want %d", got, pid)
	}
	again.send("jobs")
	again.expect(`sleep 1002`)
	w2 := d.ws(t, tokAdmin, name)
	if w2.attached.Session != session || w2.attached.New {
		t.Errorf("after the restart the WebSocket client got %s, want session %s, new:false", w2.attached.raw, session)
	}
	w2.send("echo wspid=$$")
	if got := atoi(t, w2.expect(`wspid=(\d+)`)[1]); got != pid {
		t.Errorf("after the restart the WebSocket client types into shell %d, want %d", got, pid)
	}
}

// Two gateways on one state directory serve one instance at once: what one
// client types the other sees, both list the same session, and a reset from
// one moves the clients of both into one new shell.
func TestDurableTwoGatewaysOneShell(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-1"}})
	g1 := d.gateway
	g2 := d.twin(t)
	name := d.name("web-1")

	s1 := g1.attach(t, keyAdmin, name, 80, 24)
	w1 := g1.ws(t, tokAdmin, name)
	w2 := g2.ws(t, tokAdmin, name)
	s2 := g2.attach(t, keyAdmin, name, 80, 24)
	session := w1.attached.Session
	if w2.attached.Session != session || w2.attached.New {
		t.Fatalf("the second gateway's client got %s, the first's is in session %s: want the same session, new:false", w2.attached.raw, session)
	}

	cmd, word := marker("gw1")
	s1.send(cmd)
	w2.expect(regexp.QuoteMeta(word))
	s2.expect(regexp.QuoteMeta(word))
	cmd, word = marker("gw2")
	w2.send(cmd)
	s1.expect(regexp.QuoteMeta(word))
	w1.expect(regexp.QuoteMeta(word))
	pid := s1.pid()
	if got := s2.pid(); got != pid {
		t.Fatalf("the first gateway's client is in shell %d, the second's in %d", pid, got)
	}

	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+(\S+)\s`)
	for i, g := range []*gateway{g1, g2} {
		r := g.ssh(t, keyAdmin, "whoever", "list")
		m := row.FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil || m[1] != session {
			t.Errorf("list on gateway %d: status %d, %q; want a row of %s in session %s", i+1, r.code, r.stdout, name, session)
		}
		expectDurable(t, g, name, session, true)
	}

	status, body := g2.resetHTTP(t, tokAdmin, name)
	if status != http.StatusOK || body["session"] == "" || body["session"] == session {
		t.Fatalf("POST reset on the second gateway: %d %v, want 200 and a new session", status, body)
	}
	fresh := body["session"]
	for i, w := range []*wsClient{w1, w2} {
		if ev := w.nextEvent(); ev.Type != "reset" || ev.Session != fresh {
			t.Errorf("the WebSocket client of gateway %d got %s, want a reset event to session %s", i+1, ev.raw, fresh)
		}
	}
	for _, s := range []*term{s1, s2} {
		s.expect(`\[termgate\][^\r\n]*reset`)
	}
	newPID := s1.pid()
	if newPID == pid {
		t.Fatalf("after the reset the first gateway's client is still in shell %d", pid)
	}
	if got := s2.pid(); got != newPID {
		t.Errorf("after the reset the second gateway's SSH client is in shell %d, the first's in %d", got, newPID)
	}
	w1.send("echo wspid=$$")
	if got := atoi(t, w1.expect(`wspid=(\d+)`)[1]); got != newPID {
		t.Errorf("after the reset the first gateway's WebSocket client is in shell %d, want %d", got, newPID)
	}
	waitGone(t, name, pid)
	for i, g := range []*gateway{g1, g2} {
		r := g.ssh(t, keyAdmin, "whoever", "list")
		if m := row.FindStringSubmatch(r.stdout); m == nil || m[1] != fresh {
			t.Errorf("list on gateway %d after the reset: %q, want %s in session %s", i+1, r.stdout, name, fresh)
		}
	}
}

// With no gateway running at all, the holder reaps a session that no client
// uses for --idle-timeout: the shell and its jobs are gone from the
// container.
func TestDurableIdleReapingWithoutGateway(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-1"}, idleTimeout: 3 * time.Second})
	name := d.name("web-1")

	s := d.attach(t, keyAdmin, name, 80, 24)
	pid := s.pid()
	s.send("sleep 1003 &")
	s.roundTrip()
	// Attached for longer than the idle timeout: never reaped.
	time.Sleep(4 * time.Second)
	if !shellAlive(t, name, pid) {
		t.Fatalf("shell %d was reaped while a client was attached: %v", pid, processes(t, name))
	}
	s.roundTrip()
	s.close()
	d.waitClients(t, name, 0)
	d.kill9(t)
	killed := time.Now()
	waitGone(t, name, pid, "sleep 1003")
	t.Logf("reaped within %s of the gateway's death (idle timeout 3s)", time.Since(killed).Round(100*time.Millisecond))
}

// An instance whose root filesystem is read-only cannot take the holder: it
// gets an ordinary session, which works, and /api/sessions says so.
func TestDurableReadOnlyRootFallsBack(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{})
	name := d.runContainer(t, "web-ro", testImage, "--read-only")

	s := d.attach(t, keyAdmin, name, 80, 24)
	s.roundTrip()
	w := d.ws(t, tokAdmin, name)
	cmd, word := marker("ro")
	w.send(cmd)
	s.expect(regexp.QuoteMeta(word))
	expectDurable(t, d.gateway, name, w.attached.Session, false)
}

const glibcImage = "termgate-test:glibc"

var (
	glibcOnce sync.Once
	glibcErr  error
)

// needGlibcImage builds termgate-test:glibc (scripts/test-image-glibc.sh:
// the host's bash with the glibc it links, beside a static busybox) once
// per run.
func needGlibcImage(t *testing.T) {
	t.Helper()
	glibcOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			glibcErr = err
			return
		}
		out, err := exec.Command("bash", filepath.Join(root, "scripts", "test-image-glibc.sh")).CombinedOutput()
		if err != nil {
			glibcErr = fmt.Errorf("scripts/test-image-glibc.sh: %w: %s", err, out)
		}
	})
	if glibcErr == nil {
		return
	}
	if os.Getenv("TERMGATE_REQUIRE_DOCKER") == "1" {
		t.Fatalf("TERMGATE_REQUIRE_DOCKER=1 but the glibc test image is unusable: %v", glibcErr)
	}
	t.Skipf("no glibc test image: %v", glibcErr)
}

// A glibc image with bash (the gateway's --shell auto picks it) is held
// durably like busybox: bash runs, and it outlives a crash of the gateway.
func TestDurableGlibcBash(t *testing.T) {
	t.Parallel()
	needHolder(t)
	needGlibcImage(t)
	d := durableGateway(t, options{})
	name := d.runContainer(t, "web-bash", glibcImage)

	s := d.attach(t, keyAdmin, name, 80, 24)
	s.send(`echo "bash=${BASH_VERSION%%.*}"`)
	s.expect(`bash=\d+\r?\n`)
	pid := s.pid()
	expectDurable(t, d.gateway, name, "", true)

	d.kill9(t)
	_ = s.wait()
	d.restart(t)
	again := d.attach(t, keyAdmin, name, 80, 24)
	if got := again.pid(); got != pid {
		t.Fatalf("after the crash and a restart the bash shell is %d, want %d", got, pid)
	}
	if out := again.out.Bytes(); !bytes.Contains(out, []byte("bash=")) {
		t.Errorf("the replay after the restart lost the earlier output: %q", out)
	}
}

// A durable session's clients get the whole of a burst of output, as the
// in-gateway path's do: 20 MB from the shell at full speed (more than the holder queues for a gateway: 8 MiB) reach an SSH and
// a WebSocket client, and neither is disconnected.
func TestDurableBulkOutput(t *testing.T) {
	t.Parallel()
	d := durableGateway(t, options{containers: []string{"web-1"}})
	name := d.name("web-1")

	s := d.attach(t, keyAdmin, name, 80, 24)
	s.roundTrip()
	expectDurable(t, d.gateway, name, "", true)
	conn, _, err := (&websocket.Dialer{HandshakeTimeout: waitFor}).Dial(d.wsURL(name, ""), bearer(d.tokens[tokAdmin]))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	const size = 20_000_000
	tag := tags.Add(1)
	end := []byte(fmt.Sprintf("BULK%d-42", tag))
	s.send(fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; echo BULK%d-$((40+2))`, size, tag))
	// Only this test's client reads here: count the bytes, keep the tail.
	var got int
	var tail []byte
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for !bytes.Contains(tail, end) {
		typ, data, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("the WebSocket client was cut off after %d of %d bytes: %v (last event %q)", got, size, err, tail)
		}
		if typ == websocket.TextMessage {
			tail = append(tail[:0], data...)
			if !bytes.Contains(data, []byte(`"attached"`)) {
				t.Fatalf("the WebSocket client got %s after %d of %d bytes", data, got, size)
			}
			continue
		}
		got += len(data)
		tail = append(tail, data...)
		tail = tail[max(0, len(tail)-64):]
	}
	if got < size {
		t.Errorf("the WebSocket client got %d bytes, want at least %d", got, size)
	}
	s.expect(regexp.QuoteMeta(string(end)))
	s.roundTrip()
}
