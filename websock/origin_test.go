package websock

import (
	"crypto/tls"
	"net/http/httptest"
	"testing"
)

func TestNormalizeOrigin(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://example.com", "http://example.com"},
		{"HTTPS://Example.COM:443", "https://example.com"},
		{"http://example.com:80/", "http://example.com"},
		{"http://example.com:8080", "http://example.com:8080"},
		{"https://example.com:80", "https://example.com:80"},
		{"http://[::1]:80", "http://[::1]"},
		{"http://[::1]:8080", "http://[::1]:8080"},
		{"null", ""},
		{"", ""},
		{"ws://example.com", ""},
		{"http://", ""},
		{"http://user@example.com", ""},
		{"http://example.com/path", ""},
		{"http://example.com?x=1", ""},
		{"http://example.com#f", ""},
		{"example.com", ""},
		{"http://[fe80::1%25eth0]:80", ""}, // a zone: no browser sends one (found by FuzzNormalizeOrigin)
		{"http://exa_mple.com", "http://exa_mple.com"},
		{"http://bücher.example", ""}, // browsers send punycode
	} {
		got, err := normalizeOrigin(tc.in)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("normalizeOrigin(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestOriginCheck(t *testing.T) {
	o, err := newOrigins([]string{"https://term.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		url      string // request URL (its scheme sets r.TLS)
		host     string // Host header; empty keeps the URL's
		origin   []string
		required bool
		ok       bool
	}{
		{name: "no origin, bearer", url: "http://gw:8080/x", ok: true},
		{name: "no origin, cookie", url: "http://gw:8080/x", required: true},
		{name: "same origin", url: "http://gw:8080/x", origin: []string{"http://gw:8080"}, required: true, ok: true},
		{name: "same origin, case", url: "http://gw:8080/x", origin: []string{"http://GW:8080"}, required: true, ok: true},
		{name: "other port", url: "http://gw:8080/x", origin: []string{"http://gw:9090"}},
		{name: "other scheme", url: "http://gw:8080/x", origin: []string{"https://gw:8080"}},
		{name: "tls same origin", url: "https://gw/x", origin: []string{"https://gw"}, required: true, ok: true},
		{name: "tls, http origin", url: "https://gw/x", origin: []string{"http://gw"}},
		{name: "default port in host", url: "http://gw/x", host: "gw:80", origin: []string{"http://gw"}, ok: true},
		{name: "allowed", url: "http://gw:8080/x", origin: []string{"https://term.example.com"}, required: true, ok: true},
		{name: "allowed with port", url: "http://gw:8080/x", origin: []string{"https://term.example.com:443"}, ok: true},
		{name: "foreign", url: "http://gw:8080/x", origin: []string{"https://evil.example"}},
		{name: "foreign, bearer", url: "http://gw:8080/x", origin: []string{"https://evil.example"}, required: false},
		{name: "null", url: "http://gw:8080/x", origin: []string{"null"}},
		{name: "two origins", url: "http://gw:8080/x", origin: []string{"http://gw:8080", "http://gw:8080"}},
		{name: "suffix trick", url: "http://gw:8080/x", origin: []string{"http://gw:8080.evil.example"}},
	} {
		r := httptest.NewRequest("GET", tc.url, nil)
		if tc.host != "" {
			r.Host = tc.host
		}
		if r.URL.Scheme == "https" && r.TLS == nil {
			r.TLS = &tls.ConnectionState{}
		}
		for _, v := range tc.origin {
			r.Header.Add("Origin", v)
		}
		err := o.check(r, tc.required)
		if (err == nil) != tc.ok {
			t.Errorf("%s: check = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestNewRefusesBadAllowedOrigins(t *testing.T) {
	for _, bad := range []string{"*", "example.com", "http://example.com/app", "null"} {
		if _, err := newOrigins([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
