package main

import "net"

// publicHostName is the host name of --public-host's first entry, without
// its port (a port there is the browsers', a proxy's; SSH hints print the
// SSH listener's own): what the SSH notices print after INSTANCE@. Empty
// when --public-host is not set.
func publicHostName(publicHost string) string {
	hs := splitList(publicHost)
	if len(hs) == 0 {
		return ""
	}
	if h, _, err := net.SplitHostPort(hs[0]); err == nil {
		return h
	}
	return hs[0]
}
