package exechost

import (
	"strings"
	"testing"
)

// FuzzParseServe: whatever a start exec prints (the holder's status line,
// the runtime's refusal, anything a broken or hostile binary writes), only
// the exact status lines for this socket count as a holder, and an error
// stays short.
func FuzzParseServe(f *testing.F) {
	const sock = "/tmp/.termgate/holder.sock"
	f.Add("holder 42 "+sock+"\n", "", 0)
	f.Add("already held "+sock+"\n", "", 0)
	f.Add(`OCI runtime exec failed: exec failed: unable to start container process: exec: "/tmp/x": permission denied: unknown`+"\n", "", 126)
	f.Add("", "termgate-holder: the holder daemon: boom", 1)
	f.Add("holder x "+sock, "", 0)
	f.Add("", pidLimitCrash, 2)
	f.Fuzz(func(t *testing.T, stdout, stderr string, code int) {
		out, err := parseServe(execResult{Stdout: stdout, Stderr: stderr, Code: code}, sock)
		first, _, _ := strings.Cut(stdout, "\n")
		f := strings.Fields(first)
		switch {
		case err != nil:
			if len(err.Error()) > 700 {
				t.Fatalf("an error of %d bytes", len(err.Error()))
			}
		case out == serveStarted:
			if len(f) != 3 || f[0] != "holder" || f[2] != sock {
				t.Fatalf("%q taken for a started holder", stdout)
			}
		case out == serveHeld:
			if len(f) != 3 || f[0] != "already" || f[2] != sock {
				t.Fatalf("%q taken for a live holder", stdout)
			}
		case out == serveCannot:
			if code != 126 && code != 127 {
				t.Fatalf("status %d (%q) taken for a directory the holder cannot run in", code, stdout)
			}
		}
	})
}
