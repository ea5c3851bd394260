package keys

import (
	"bytes"
	"net"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// wellFormed reports whether every pattern would be accepted by
// parseInstances: non-empty, no '/', valid for path.Match.
func wellFormed(t *testing.T, pats []string) {
	t.Helper()
	for _, p := range pats {
		if _, err := path.Match(p, ""); p == "" || strings.Contains(p, "/") || err != nil {
			t.Fatalf("accepted malformed instances pattern %q (%v)", p, err)
		}
	}
}

func FuzzParseAuthorizedKeys(f *testing.F) {
	_, l1 := testKey(f, 1)
	_, l2 := testKey(f, 2)
	for _, s := range []string{
		"",
		"# comment\n\n",
		l1 + " alice@laptop\n",
		`instances="web-*,db" ` + l1,
		`restrict,pty,from="10.0.0.0/8,!10.1.*,2001:db8::/32" ` + l1 + " c\r\n" + l2,
		`command="/bin/sh -c \"x\"",no-pty ` + l1,
		`from="10.0.0.1/8" ` + l1 + "\n" + l1,
		`instances="[!x]*,a\\,b" ` + l2,
		`instances="",from="" ` + l1,
		"ssh-ed25519 AAAA\nnot a key",
		`no-pty="x",NO-PTY,Restrict ` + l2 + " \x1b[31mred",
		`restrict,port-forwarding,permitopen="127.0.0.1:80",permitopen="[::1]:*",permitopen="*:22" ` + l1,
		`permitopen="[::1",permitopen="a/0",permitopen="*" ` + l2,
	} {
		f.Add([]byte(s))
	}
	addrs := []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("127.0.0.1")}
	f.Fuzz(func(t *testing.T, data []byte) {
		ak, warnings := ParseAuthorizedKeys(data)
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, w := range warnings {
			rest, ok := strings.CutPrefix(w, "line ")
			digits := rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789"))]
			n, err := strconv.Atoi(digits)
			if !ok || err != nil || n < 1 || n > lines {
				t.Fatalf("warning %q names no line in 1..%d", w, lines)
			}
		}
		usable := 0
		for k, kls := range ak.byKey {
			key, err := gossh.ParsePublicKey([]byte(k))
			if err != nil {
				t.Fatalf("stored key does not parse: %v", err)
			}
			for _, kl := range kls {
				if kl.id.Name == "" || kl.id.Fingerprint != gossh.FingerprintSHA256(key) {
					t.Fatalf("line %d: identity %+v", kl.line, kl.id)
				}
				if displayName(kl.id.Name, 1000) != kl.id.Name {
					t.Fatalf("line %d: name %q has unprintable characters", kl.line, kl.id.Name)
				}
				if kl.refused != "" {
					continue
				}
				usable++
				wellFormed(t, g(kl.id).Instances)
				kl.id.May("web-1")
				permitOpenWellFormed(t, kl.id)
			}
			for _, a := range addrs {
				id, err := ak.Authorize(key, tcpAddr(a))
				if err == nil {
					wellFormed(t, g(id).Instances)
				}
			}
		}
		if usable != ak.Len() {
			t.Fatalf("Len() = %d, usable lines %d", ak.Len(), usable)
		}
	})
}

func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{
		"",
		"s3cr3t ci instances=web-*\n",
		"# c\n\nAAAAAAAAAAAAAAAAAAAA\nAAAAAAAAAAAAAAAAAAAA dup\n",
		`tok instances="db,[!x]*" name`,
		"tok a b\ninstances=x\ntok2 instances=a instances=b\r\n",
		"t\x00k\n\t\t tok name\t\n",
		// Issue 9 item 6: option typos must never leave a token unrestricted.
		"tok instance=web*\ntok\n",
		"tok Instances=web*\n",
		"tok \"instances=web*\"\n",
		"tok ops read-only instances=\"web-*,db\"\ntok2 Read-Only\ntok3 web*\n",
		"QUJDREVGR0hJSktMTU5PUA== ops=x 'a'\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, warnings := ParseTokens(data)
		for _, w := range warnings {
			if !strings.HasPrefix(w, "line ") {
				t.Fatalf("warning %q does not name its line", w)
			}
		}
		seen := map[[32]byte]bool{}
		for _, e := range tk.entries {
			if e.id.Name == "" || strings.ContainsAny(e.id.Name, " \t\r\n") {
				t.Fatalf("bad name %q", e.id.Name)
			}
			if seen[e.hash] {
				t.Fatal("duplicate token accepted")
			}
			seen[e.hash] = true
			wellFormed(t, g(e.id).Instances)
		}
		// Every accepted line's first field is a valid token.
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
				continue
			}
			if id, ok := tk.Check(fields[0]); ok && id.Name == "" {
				t.Fatalf("token %q has no name", fields[0])
			}
		}
		if _, ok := tk.Check(""); ok {
			t.Fatal("the empty token was accepted")
		}
		// The first line with an accepted token says exactly what its
		// identity is: every field after the token is instances=, read-only
		// or one plain NAME, and nothing else (a typo would otherwise
		// leave the token unrestricted).
		checked := map[string]bool{}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 || strings.HasPrefix(fields[0], "#") || checked[fields[0]] {
				continue
			}
			checked[fields[0]] = true
			id, ok := tk.Check(fields[0])
			if !ok {
				continue
			}
			names, limited, readOnly := 0, false, false
			for _, f := range fields[1:] {
				switch {
				case strings.HasPrefix(f, "instances="):
					limited = true
				case f == "read-only":
					readOnly = true
				case strings.ContainsAny(f, "=\"'*?[],"):
					t.Fatalf("line %q accepted with field %q", line, f)
				default:
					names++
				}
			}
			if names > 1 || limited != (len(g(id).Instances) > 0) || readOnly != g(id).ReadOnly {
				t.Fatalf("line %q gave %+v", line, id)
			}
		}
	})
}

func FuzzFromPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"10.0.0.0/8", "10.1.2.3"},
		{"!10.0.0.1,*", "10.0.0.1"},
		{"192.168.1.*", "192.168.1.7"},
		{"2001:db8::/32,!2001:db8::1", "2001:db8::1"},
		{"fe80::?", "fe80::1"},
		{"*.example.com", "::1"},
		{"10.0.0.1/8", "10.0.0.1"},
		{",", "1.2.3.4"},
		{"::ffff:1.2.3.4", "1.2.3.4"},
		{"**?*a*", "1.1.1.1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, list, ipText string) {
		ip, err := netip.ParseAddr(ipText)
		if err != nil {
			return
		}
		ip = ip.Unmap().WithZone("")
		fl, problem := parseFrom(list)
		got := fl.match(ip)
		if problem != "" && got {
			t.Fatalf("invalid list %q (%s) matched %s", list, problem, ip)
		}
		if problem == "" && !strings.HasPrefix(list, "!") && !strings.Contains(list, ",!") {
			// Without negations, adding the client's own address matches.
			if l := list + "," + ip.String(); !mustParseFrom(t, l).match(ip) {
				t.Fatalf("%q does not match %s", l, ip)
			}
		}
		if mustParseFrom(t, "!*,"+ip.String()).match(ip) {
			t.Fatalf("!* did not refuse %s", ip)
		}
		if got {
			// A matching list still matches with one more positive entry.
			if l := list + ",*"; !mustParseFrom(t, l).match(ip) {
				t.Fatalf("%q matches %s but %q does not", list, ip, l)
			}
			// Refusing the client's own address refuses it.
			if l := list + ",!" + ip.String(); mustParseFrom(t, l).match(ip) {
				t.Fatalf("%q matches %s", l, ip)
			}
		}
	})
}

// mustParseFrom parses a list the fuzz target built from a valid one.
func mustParseFrom(t *testing.T, list string) *fromList {
	t.Helper()
	f, problem := parseFrom(list)
	if problem != "" {
		t.Fatalf("parseFrom(%q): %s", list, problem)
	}
	return f
}

func tcpAddr(a netip.Addr) net.Addr {
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 22))
}

// permitOpenWellFormed checks an accepted line's permitopen= targets: each
// splits into a host and a port DecideOpen understands, and allows exactly
// what it names.
func permitOpenWellFormed(t *testing.T, id Identity) {
	t.Helper()
	for _, p := range g(id).PermitOpen {
		h, pt, err := net.SplitHostPort(p)
		if err != nil || h == "" {
			t.Fatalf("permitopen target %q: %v", p, err)
		}
		port := 443
		if pt != "*" {
			if port, err = strconv.Atoi(pt); err != nil || port < 1 || port > 65535 {
				t.Fatalf("permitopen target %q: bad port", p)
			}
		}
		a := Access{Use: true, Write: true, Forward: true, PermitOpen: g(id).PermitOpen}
		if a.DecideOpen(h, port) != nil {
			t.Fatalf("permitopen target %q does not allow %s port %d", p, h, port)
		}
	}
}
