package sshd

import (
	"regexp"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// allowedEnv is the default env policy (--accept-env "LANG LC_*")
// written as a regular expression, apart
// from envAllowed (which also bounds the value and refuses a NUL in it).
var allowedEnv = regexp.MustCompile(`^(TERM|LANG|LC_[A-Za-z0-9_]*)$`)

// FuzzEnvRequest feeds env request payloads to the channel filter's check:
// (name, value) marshalled as the protocol does when raw is empty, else raw
// bytes.
func FuzzEnvRequest(f *testing.F) {
	for _, s := range [][2]string{
		{"TERM", "xterm"}, {"LANG", "C.UTF-8"}, {"LC_ALL", "C"}, {"LC_", ""}, {"LD_PRELOAD", "/tmp/x.so"},
		{"LC_ALL\x00", ""}, {"lc_all", ""}, {"TERM ", ""}, {"LANGUAGE", "en"}, {"LC_é", ""},
	} {
		f.Add(s[0], s[1], []byte(nil))
	}
	f.Add("", "", []byte{0, 0, 0, 4, 'T', 'E', 'R', 'M'}) // no value
	f.Add("", "", []byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, name, value string, raw []byte) {
		payload := raw
		if len(payload) == 0 {
			payload = gossh.Marshal(struct{ Name, Value string }{name, value})
			want := allowedEnv.MatchString(name) && len(value) <= maxEnvValue && !strings.ContainsRune(value, 0)
			if kv, got := envAllowed(payload, DefaultAcceptEnv); got != want || (got && kv != name+"="+value) {
				t.Fatalf("env %q: accepted %v, want %v", name, got, want)
			}
			return
		}
		if _, ok := envAllowed(payload, DefaultAcceptEnv); ok {
			var kv struct{ Name, Value string }
			if err := gossh.Unmarshal(payload, &kv); err != nil || !allowedEnv.MatchString(kv.Name) {
				t.Fatalf("accepted payload %q (%v)", payload, err)
			}
		}
	})
}
