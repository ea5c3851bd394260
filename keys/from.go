package keys

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// fromList is a parsed from="PATTERN-LIST" option. Matching follows
// OpenSSH's match_host_and_ip with UseDNS=no, where the client's host name is
// its address in text form.
type fromList struct {
	entries []fromEntry
	// invalid, when set, says why the list never matches (OpenSSH treats
	// an empty entry or a bad network as an error that refuses the line).
	invalid string
}

type fromEntry struct {
	neg bool
	// net is set when the entry is an address or a CIDR network.
	net   netip.Prefix
	isNet bool
	glob  string // the entry as written, for * and ? matching
	lglob string // glob lower-cased, for the host-name pass
}

// parseFrom parses a from= value. It never fails: an invalid list is kept
// (it never matches) and described by problem for the file's warnings.
func parseFrom(list string) (f *fromList, problem string) {
	f = &fromList{}
	for _, e := range strings.Split(list, ",") {
		var fe fromEntry
		if strings.HasPrefix(e, "!") {
			fe.neg, e = true, e[1:]
		}
		if e == "" {
			f.invalid = fmt.Sprintf("from=%q has an empty entry", list)
			continue
		}
		fe.glob, fe.lglob = e, strings.ToLower(e)
		if strings.Contains(e, "/") {
			p, err := netip.ParsePrefix(e)
			switch {
			case err != nil:
				f.invalid = fmt.Sprintf("from= entry %q is not a valid network", e)
			case p.Masked() != p:
				f.invalid = fmt.Sprintf("from= entry %q has host bits set (did you mean %s?)", e, p.Masked())
			default:
				fe.net, fe.isNet = p, true
			}
		} else if a, err := netip.ParseAddr(e); err == nil && a.Zone() == "" {
			a = a.Unmap()
			fe.net, fe.isNet = netip.PrefixFrom(a, a.BitLen()), true
		}
		f.entries = append(f.entries, fe)
	}
	if f.invalid != "" {
		return f, f.invalid + "; this line never matches"
	}
	return f, ""
}

// match reports whether the client address ip is allowed. An invalid
// address never matches.
func (f *fromList) match(ip netip.Addr) bool {
	if f.invalid != "" || !ip.IsValid() {
		return false
	}
	ip = ip.Unmap().WithZone("")
	text := ip.String()
	// Address pass (OpenSSH addr_match_list): networks by containment,
	// other entries as wildcards over the address text.
	addrOK := false
	for _, e := range f.entries {
		var hit bool
		if e.isNet {
			hit = e.net.Contains(ip)
		} else {
			hit = wildcard(text, e.glob)
		}
		if hit {
			if e.neg {
				return false
			}
			addrOK = true
		}
	}
	// Host-name pass (OpenSSH match_hostname): the "host name" is the
	// address text; every entry is a case-insensitive wildcard.
	hostOK := false
	for _, e := range f.entries {
		if wildcard(text, e.lglob) {
			if e.neg {
				return false
			}
			hostOK = true
		}
	}
	return addrOK || hostOK
}

// wildcard reports whether s matches pattern, where '*' matches any run of
// bytes and '?' any one byte (OpenSSH match_pattern). It runs in
// O(len(s)*len(pattern)) time.
func wildcard(s, pattern string) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(pattern) && (pattern[pi] == '?' || pattern[pi] == s[si]):
			si++
			pi++
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			mark++
			si, pi = mark, star+1
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// clientIP extracts the client's IP address from a connection's remote
// address; ok is false for addresses without one (pipes, Unix sockets).
func clientIP(remote net.Addr) (ip netip.Addr, ok bool) {
	switch a := remote.(type) {
	case nil:
		return netip.Addr{}, false
	case *net.TCPAddr:
		if a != nil {
			ip, ok = netip.AddrFromSlice(a.IP)
		}
	case *net.UDPAddr:
		if a != nil {
			ip, ok = netip.AddrFromSlice(a.IP)
		}
	case *net.IPAddr:
		if a != nil {
			ip, ok = netip.AddrFromSlice(a.IP)
		}
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return netip.Addr{}, false
		}
		ip, ok = ap.Addr(), true
	}
	if !ok {
		return netip.Addr{}, false
	}
	return ip.Unmap().WithZone(""), true
}
