package websock

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// FuzzNormalizeOrigin: whatever the Origin header holds, normalizeOrigin
// either refuses it or returns a lower-case scheme://host[:port] with
// nothing after it, which normalizes to itself (so two spellings of one
// origin compare equal, and nothing smuggles a path, userinfo or query past
// the comparison).
func FuzzNormalizeOrigin(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "HTTPS://Example.COM:443", "http://example.com:80/", "http://[::1]:80",
		"null", "", "ws://x", "http://user@x", "http://x/p", "http://x?q", "http://x#f", "http://x:8080.evil.example",
		"http://[fe80::1%25eth0]:80", "http://x:", "http://%41", "https://xn--nxasmq6b.example", "http://x\\@y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := normalizeOrigin(s)
		if err != nil {
			if got != "" {
				t.Fatalf("error %v with result %q", err, got)
			}
			return
		}
		rest, ok := strings.CutPrefix(got, "http://")
		if !ok {
			rest, ok = strings.CutPrefix(got, "https://")
		}
		if !ok || rest == "" {
			t.Fatalf("%q -> %q: not http(s)://host", s, got)
		}
		if strings.ContainsAny(rest, "/?#@") {
			t.Fatalf("%q -> %q: more than a host", s, got)
		}
		if again, err := normalizeOrigin(got); err != nil || again != got {
			t.Fatalf("%q -> %q -> %q, %v: not idempotent", s, got, again, err)
		}
		if strings.ToLower(got) != got {
			t.Fatalf("%q -> %q: not lower case", s, got)
		}
	})
}

// FuzzBearer: the Authorization header parser never panics, and a token it
// returns is non-empty, has no surrounding blanks and comes back unchanged
// from a well-formed header.
func FuzzBearer(f *testing.F) {
	for _, s := range []string{
		"Bearer abc", "bearer abc", "BEARER  abc  ", "Bearer ", "Bearer", "Basic abc", "Bearer a b", "", " Bearer x",
		"Bearer\tx", "Token x", "Bearer \x00", "Bearer ä",
	} {
		f.Add(s, false)
	}
	f.Add("Bearer abc", true)
	f.Fuzz(func(t *testing.T, value string, twice bool) {
		r := &http.Request{Header: http.Header{"Authorization": {value}}}
		if twice {
			r.Header.Add("Authorization", value)
		}
		token, ok, err := bearer(r)
		if twice && (ok || err == nil) {
			t.Fatalf("two headers accepted: %q", token)
		}
		if !ok {
			if token != "" {
				t.Fatalf("not ok, but token %q", token)
			}
			return
		}
		if err != nil || token == "" || strings.TrimSpace(token) != token {
			t.Fatalf("%q -> %q, %v", value, token, err)
		}
		r2 := &http.Request{Header: http.Header{"Authorization": {"Bearer " + token}}}
		if again, ok, err := bearer(r2); !ok || err != nil || again != token {
			t.Fatalf("%q -> %q -> %q", value, token, again)
		}
	})
}

// FuzzClientKey: any RemoteAddr maps to the zero prefix or to an IPv4 /32
// or IPv6 /64 that contains the address.
func FuzzClientKey(f *testing.F) {
	for _, s := range []string{
		"192.0.2.1:1234", "[::ffff:192.0.2.1]:80", "[2001:db8::1]:443", "[fe80::1%eth0]:22", "", "@", "1.2.3.4",
		"[::1]", "host:80", "[1:2:3:4:5:6:7:8]:65535", "01.2.3.4:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := clientKey(s)
		if !k.IsValid() {
			return
		}
		if k.Addr().Is4() != (k.Bits() == 32) || (k.Bits() != 32 && k.Bits() != 64) || k.Masked() != k {
			t.Fatalf("%q -> %v", s, k)
		}
		if ap, err := netip.ParseAddrPort(s); err == nil {
			if a := ap.Addr().Unmap().WithZone(""); !k.Contains(a) {
				t.Fatalf("%q -> %v does not contain %v", s, k, a)
			}
		}
	})
}
