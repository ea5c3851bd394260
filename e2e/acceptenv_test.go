package e2e

import (
	"strings"
	"testing"
)

// TestAcceptEnv: with --accept-env "LANG LC_* FOO", what ssh -o SetEnv
// sends reaches a command and the shell of a new session when its name
// is accepted; other names are dropped silently (the command still
// runs), and TERMGATE_ variables never reach the instance.
func TestAcceptEnv(t *testing.T) {
	t.Parallel()
	sshBin := needOpenSSH(t)
	g := newGateway(t, options{containers: []string{"web-env"}, args: []string{"--accept-env", "LANG LC_* FOO"}})
	name := g.name("web-env")

	out, errOut, code := g.sshRun(t, sshBin, keyAdmin, nil, "-o", "SetEnv=FOO=bar TERMGATE_X=evil BAR=no", name+"@127.0.0.1",
		`echo "[$FOO][${TERMGATE_X-unset}][${BAR-unset}][$LC_TERMGATE_TEST]"`)
	if code != 0 || strings.TrimSpace(string(out)) != "[bar][unset][unset][yes]" {
		t.Fatalf("a command's environment: %q (status %d, stderr %q); want [bar][unset][unset][yes]", out, code, errOut)
	}

	out, errOut, code = g.sshRun(t, sshBin, keyAdmin, []byte("echo \"[$FOO][$TERMGATE_SESSION]\"; exit\n"),
		"-tt", "-o", "SetEnv=FOO=bar TERMGATE_SESSION=evil", name+"+envtest@127.0.0.1")
	if !strings.Contains(string(out), "[bar][") || strings.Contains(string(out), "evil]") {
		t.Fatalf("a new session's shell: %q (status %d, stderr %q); want FOO=bar and the gateway's own marker", out, code, errOut)
	}
}
