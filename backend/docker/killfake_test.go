package docker

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

const dashImage = "termgate-test:dash"

var (
	dashOnce sync.Once
	dashErr  error
)

// needDashImage builds termgate-test:dash (dash as /bin/sh, GNU tr, glibc)
// once per run.
func needDashImage(t *testing.T) {
	t.Helper()
	dashOnce.Do(func() {
		out, err := exec.Command("bash", "testdata/dash-image.sh").CombinedOutput()
		if err != nil {
			dashErr = fmt.Errorf("testdata/dash-image.sh: %w: %s", err, out)
		}
	})
	if dashErr == nil {
		return
	}
	if os.Getenv("TERMGATE_REQUIRE_DOCKER") == "1" {
		t.Fatalf("TERMGATE_REQUIRE_DOCKER=1 but the dash test image is unusable: %v", dashErr)
	}
	t.Skipf("no dash test image: %v", dashErr)
}

// runImage starts a container of image (removed at cleanup).
func runImage(t *testing.T, image string) string {
	t.Helper()
	name := "tgtest-" + randomHex(6)
	dockerCLI(t, "run", "-d", "--init", "--network", "none", "--name", name, image, "sleep", "1000000")
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	return name
}

// A process chooses its own command name (/proc/PID/comm), which /proc/PID/stat
// shows between parentheses, ')' and newlines included. One that names itself
// "x) S 0 0 SID\n" must not make its session's Kill end session SID, and one
// that names itself "x) Z\n" must not escape its session's Kill as a zombie;
// in busybox and in dash+glibc images alike.
func TestKillSeesThroughFakeCommandNames(t *testing.T) {
	needEngine(t)
	t.Parallel()
	for _, image := range []string{testImage, dashImage} {
		t.Run(image, func(t *testing.T) {
			if image == dashImage {
				needDashImage(t)
			}
			t.Parallel()
			name := runImage(t, image)
			b := newBackend(t, Config{})
			victim, _, _ := startShell(t, b, name, sessions.DefaultSize)
			victim.write(t, "sleep 1031 &\n")
			victimPID := shellPID(t, victim)

			attacker, _, _ := startShell(t, b, name, sessions.DefaultSize)
			// Each faker renames itself, then lives on as a shell looping
			// over sleep (exec would reset the name).
			attacker.write(t, fmt.Sprintf(`sh -c 'printf "x) S 0 0 %d\n" >/proc/self/comm; while :; do sleep 1033; done' &`+"\n", victimPID))
			attacker.write(t, `sh -c 'printf "x) Z\n" >/proc/self/comm; while :; do sleep 1034; done' &`+"\n")
			attacker.write(t, `setsid sh -c 'printf "x) Z\n" >/proc/self/comm; while :; do sleep 1035; done' &`+"\n")
			attackerPID := shellPID(t, attacker)
			// busybox ps shows a renamed process as {COMM}.
			fakers := func(p proc) bool {
				return strings.Contains(p.Args, "/proc/self/comm") || strings.Contains(p.Args, "x) ")
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				faked := dockerCLI(t, "exec", name, "sh", "-c", `cat /proc/[0-9]*/comm | grep -c '^x) ' || true`)
				if faked == "3" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s processes renamed themselves, want 3: %+v", faked, procs(t, name))
				}
				time.Sleep(50 * time.Millisecond)
			}

			if err := attacker.p.Kill(testContext(t)); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			attacker.waitEOF(t, 5*time.Second)
			if left := live(t, name, func(p proc) bool { return p.SID == attackerPID || fakers(p) || sleeps("1033", "1034", "1035")(p) }); len(left) != 0 {
				t.Errorf("the attacker's session left processes behind: %+v", left)
			}
			if got := live(t, name, inSession(victimPID)); len(got) != 2 {
				t.Errorf("the victim's session after the attacker's Kill: %+v, want its shell and sleep 1031 (all: %+v)", got, procs(t, name))
			}
			victim.write(t, "echo still-$((2+2))\n")
			victim.expect(t, `still-4`, 10*time.Second)
		})
	}
}
