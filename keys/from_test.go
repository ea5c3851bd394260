package keys

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestFromMatch(t *testing.T) {
	tests := []struct {
		list string
		ip   string
		want bool
	}{
		// IPv4 addresses, networks and wildcards.
		{"10.0.0.1", "10.0.0.1", true},
		{"10.0.0.1", "10.0.0.2", false},
		{"10.0.0.0/8", "10.1.2.3", true},
		{"10.0.0.0/8", "11.0.0.1", false},
		{"192.168.1.0/24", "192.168.1.255", true},
		{"192.168.1.*", "192.168.1.77", true},
		{"192.168.1.*", "192.168.10.1", false},
		{"10.0.0.?", "10.0.0.5", true},
		{"10.0.0.?", "10.0.0.15", false},
		{"*", "203.0.113.9", true},
		{"1.2.3.4,10.0.0.0/8", "10.9.9.9", true},
		// Negation: a matching negated entry refuses, wherever it is.
		{"!10.0.0.1,*", "10.0.0.1", false},
		{"!10.0.0.1,*", "10.0.0.2", true},
		{"*,!10.0.0.0/8", "10.5.5.5", false},
		{"*,!10.0.0.0/8", "192.168.0.1", true},
		{"!192.168.1.*,10.0.0.0/8", "10.0.0.1", true},
		{"!10.0.0.1", "10.0.0.2", false}, // no positive entry
		{"!*", "10.0.0.2", false},
		// IPv6.
		{"2001:db8::/32", "2001:db8::1", true},
		{"2001:db8::/32", "2001:db9::1", false},
		{"::1", "::1", true},
		{"::1", "127.0.0.1", false},
		{"2001:DB8::1", "2001:db8::1", true},
		{"2001:DB8:*", "2001:db8::5", true}, // host-name pass is case-insensitive
		{"2001:db8::?", "2001:db8::5", true},
		{"fe80::*", "fe80::1%eth0", true}, // the client's zone is ignored
		{"!2001:db8::/32,*", "2001:db8::7", false},
		// Families do not mix; IPv4-mapped clients count as IPv4.
		{"10.0.0.0/8", "2001:db8::1", false},
		{"::/0", "10.0.0.1", false},
		{"10.0.0.0/8", "::ffff:10.0.0.1", true},
		{"::ffff:10.0.0.1", "10.0.0.1", true},
		// Host names never match without DNS, and their negation never refuses.
		{"*.example.com", "10.0.0.1", false},
		{"localhost", "127.0.0.1", false},
		{"!*.example.com,10.0.0.1", "10.0.0.1", true},
		// Invalid lists never match, even with an otherwise matching entry.
		{"10.0.0.1/8", "10.0.0.1", false},
		{"10.0.0.0/33", "10.0.0.1", false},
		{"10.0.0.0/abc", "10.0.0.1", false},
		{"10.0.0.0/8,", "10.0.0.1", false},
		{",10.0.0.0/8", "10.0.0.1", false},
		{"!,*", "10.0.0.1", false},
		{"", "10.0.0.1", false},
		{"*,2001:db8::1/32", "10.0.0.1", false},
	}
	for _, tt := range tests {
		f, _ := parseFrom(tt.list)
		ip := netip.MustParseAddr(tt.ip)
		if got := f.match(ip); got != tt.want {
			t.Errorf("from=%q matches %s = %v, want %v", tt.list, tt.ip, got, tt.want)
		}
	}
}

func TestParseFromProblems(t *testing.T) {
	tests := []struct{ list, want string }{
		{"10.0.0.0/8,::1", ""},
		{"*.example.com", ""},
		{"10.0.0.1/8", "host bits set (did you mean 10.0.0.0/8?)"},
		{"10.0.0.0/33", "not a valid network"},
		{"a,,b", "empty entry"},
		{"!", "empty entry"},
	}
	for _, tt := range tests {
		_, problem := parseFrom(tt.list)
		if (tt.want == "") != (problem == "") || !strings.Contains(problem, tt.want) {
			t.Errorf("parseFrom(%q) problem = %q, want %q", tt.list, problem, tt.want)
		}
		if problem != "" && !strings.Contains(problem, "never matches") {
			t.Errorf("parseFrom(%q) problem = %q does not say the line never matches", tt.list, problem)
		}
	}
}

func TestFromMatchInvalidClient(t *testing.T) {
	f, _ := parseFrom("*")
	if f.match(netip.Addr{}) {
		t.Error("the zero address matched *")
	}
}

func TestWildcard(t *testing.T) {
	tests := []struct {
		s, pattern string
		want       bool
	}{
		{"", "", true},
		{"", "*", true},
		{"", "?", false},
		{"abc", "*", true},
		{"abc", "a?c", true},
		{"abc", "a*c", true},
		{"abc", "a*b", false},
		{"abc", "*c", true},
		{"abc", "ab", false},
		{"ab", "abc", false},
		{"abc", "ABC", false},
		{"a*c", "a\\*c", false}, // no escapes in OpenSSH patterns
		{"axbxc", "a*b*c", true},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "*a*a*a*a*a*a*a*a*c", false},
	}
	for _, tt := range tests {
		if got := wildcard(tt.s, tt.pattern); got != tt.want {
			t.Errorf("wildcard(%q, %q) = %v, want %v", tt.s, tt.pattern, got, tt.want)
		}
	}
}

func TestWildcardIsNotExponential(t *testing.T) {
	s := strings.Repeat("a", 5000)
	p := strings.Repeat("*a", 2000) + "b"
	start := time.Now()
	if wildcard(s, p) {
		t.Fatal("matched")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("wildcard took %v", d)
	}
}

func TestClientIP(t *testing.T) {
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	var nilTCP *net.TCPAddr
	tests := []struct {
		name string
		addr net.Addr
		want string // "" = no IP
	}{
		{"tcp4", tcp("192.0.2.1"), "192.0.2.1"},
		{"tcp6", tcp("2001:db8::1"), "2001:db8::1"},
		{"tcp6 zone", &net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0"}, "fe80::1"},
		{"mapped", &net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1").To16()}, "192.0.2.1"},
		{"udp", &net.UDPAddr{IP: net.ParseIP("192.0.2.2")}, "192.0.2.2"},
		{"other with host:port", fakeAddr("[2001:db8::2]:22"), "2001:db8::2"},
		{"nil", nil, ""},
		{"typed nil", nilTCP, ""},
		{"no IP in TCPAddr", &net.TCPAddr{}, ""},
		{"pipe", p1.RemoteAddr(), ""},
		{"unix", &net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, ""},
	}
	for _, tt := range tests {
		ip, ok := clientIP(tt.addr)
		got := ""
		if ok {
			got = ip.String()
		}
		if got != tt.want {
			t.Errorf("%s: clientIP(%v) = %q, want %q", tt.name, tt.addr, got, tt.want)
		}
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "fake" }
func (a fakeAddr) String() string  { return string(a) }
