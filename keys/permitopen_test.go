package keys

import (
	"slices"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

func TestParsePermitOpen(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{in: "localhost:80", want: "localhost:80"},
		{in: "127.0.0.1:8080", want: "127.0.0.1:8080"},
		{in: "db/5432", want: "db:5432"}, // hpdelim2 takes '/' too
		{in: "[::1]:22", want: "[::1]:22"},
		{in: "[2001:db8::1]/443", want: "[2001:db8::1]:443"},
		{in: "*:80", want: "*:80"},
		{in: "web:*", want: "web:*"},
		{in: "*:*", want: "*:*"},
		{in: "web:080", want: "web:80"},
		{in: "web:65535", want: "web:65535"},
		{in: "web", err: "HOST:PORT"},
		{in: ":80", err: "invalid host"},
		{in: "a b:80", err: "invalid host"},
		{in: "web:", err: "invalid port"},
		{in: "web:0", err: "invalid port"},
		{in: "web:65536", err: "invalid port"},
		{in: "web:+80", err: "invalid port"},
		{in: "web:http", err: "invalid port"},
		{in: "::1:22", err: "invalid host"}, // IPv6 needs brackets
		{in: "[::1]", err: "[ADDRESS]:PORT"},
		{in: "[::1:22", err: "missing ']'"},
		{in: "[::1]x22", err: "[ADDRESS]:PORT"},
		{in: "[]:22", err: "invalid host"},
	} {
		got, err := parsePermitOpen(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parsePermitOpen(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parsePermitOpen(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestDecideOpen(t *testing.T) {
	open := Identity{Grants: []Grant{{}}}.On("web1", Switches{})
	if open.DecideOpen("anything", 1) != nil {
		t.Fatal("no permitopen= must allow any target")
	}
	pats := []string{"localhost:80", "[::1]:*", "*:5432", "db:0005"}
	id := Identity{Grants: []Grant{{}}}
	for _, p := range pats {
		v, err := parsePermitOpen(p)
		if err != nil {
			t.Fatal(err)
		}
		id.Grants[0].PermitOpen = append(id.Grants[0].PermitOpen, v)
	}
	for _, tt := range []struct {
		host string
		port int
		want bool
	}{
		{"localhost", 80, true},
		{"localhost", 81, false},
		{"LOCALHOST", 80, false}, // literal, as OpenSSH's strcmp
		{"127.0.0.1", 80, false}, // no name lookup
		{"::1", 1, true},
		{"::1", 65535, true},
		{"[::1]", 1, false},
		{"anything", 5432, true},
		{"db", 5, true}, // OpenSSH compares numbers
	} {
		if got := id.On("web1", Switches{}).DecideOpen(tt.host, tt.port) == nil; got != tt.want {
			t.Errorf("DecideOpen(%q, %d) allowed %v, want %v", tt.host, tt.port, got, tt.want)
		}
	}
}

func TestAuthorizedKeysPortForwarding(t *testing.T) {
	key, line := testKey(t, 1)
	ak, warnings := ParseAuthorizedKeys([]byte(`no-port-forwarding,permitopen="127.0.0.1:8080",permitopen="[::1]:*" ` + line + "\n"))
	if len(warnings) != 0 {
		t.Fatalf("warnings %q", warnings)
	}
	id, err := ak.Authorize(key, tcp("192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	// no-port-forwarding wins over its permitopen= (as in OpenSSH);
	// the targets are still what the line says.
	if !g(id).NoPortForwarding || id.On("web1", Switches{}).DecideOpen("127.0.0.1", 8080) == nil ||
		!slices.Equal(g(id).PermitOpen, []string{"127.0.0.1:8080", "[::1]:*"}) {
		t.Fatalf("identity %+v", id)
	}
	ak, warnings = ParseAuthorizedKeys([]byte(`permitopen="nope" ` + line + "\n"))
	if ak.Len() != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "permitopen") {
		t.Fatalf("a malformed permitopen= must refuse the line: Len %d, warnings %q", ak.Len(), warnings)
	}
}

func TestCertPortForwarding(t *testing.T) {
	ca := testSigner(t, 100)
	user, _ := testKey(t, 1)
	cas, _ := ParseUserCAs([]byte(caLine(t, ca) + "\n"))
	for _, ext := range []map[string]string{
		{"permit-pty": ""},
		{"permit-pty": "", "permit-port-forwarding": ""},
	} {
		cert := testCert(t, user, ca, func(c *gossh.Certificate) { c.Extensions = ext })
		id, err := cas.AuthorizeCertAt(cert, tcp("192.0.2.7"), certAt)
		if err != nil {
			t.Fatal(err)
		}
		_, permit := ext["permit-port-forwarding"]
		if g(id).NoPortForwarding == permit {
			t.Errorf("extensions %v: NoPortForwarding = %v", ext, g(id).NoPortForwarding)
		}
	}
}
