package main

import (
	"fmt"
	"net"
	"strconv"
)

// listenAddr checks a listener address (--ssh-addr, --http-addr) before
// anything is created: a bare port (2222) is the usual slip, and the
// listener's own error ("missing port in address") would come only after
// the host key and tokens were made, and does not say what to write.
func listenAddr(s string) error {
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		return fmt.Errorf("is a port, not an address: write :%s (every interface) or 127.0.0.1:%s (this host only)", s, s)
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		return fmt.Errorf("is not an address: write HOST:PORT, :PORT (every interface) or 127.0.0.1:PORT")
	}
	return nil
}
