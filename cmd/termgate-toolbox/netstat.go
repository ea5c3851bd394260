package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// netstat lists the instance's sockets from /proc/net (its network
// namespace's): TCP and UDP, IPv4 and IPv6; -l only the listening ones.
// Options like -tunlp are accepted; no process names (that would take
// reading every process's fds).

var tcpStates = map[string]string{
	"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
	"06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING",
}

func netstatTool(_ context.Context, tio toolIO, args []string) error {
	listening := false
	for _, a := range args {
		if strings.HasPrefix(a, "-") && strings.Contains(a, "l") {
			listening = true
		}
	}
	fmt.Fprintf(tio.out, "%-5s %-45s %-45s %s\n", "Proto", "Local Address", "Foreign Address", "State")
	for _, f := range []struct{ proto, file string }{{"tcp", "tcp"}, {"tcp6", "tcp6"}, {"udp", "udp"}, {"udp6", "udp6"}} {
		socks, err := readSockets(procRoot + "/net/" + f.file)
		if err != nil {
			if os.IsNotExist(err) {
				continue // no IPv6, say
			}
			return err
		}
		for _, s := range socks {
			state := tcpStates[s.state]
			listen := state == "LISTEN"
			if strings.HasPrefix(f.proto, "udp") { // 07: bound, not connected
				listen, state = s.state == "07", map[bool]string{true: "", false: "ESTABLISHED"}[s.state == "07"]
			}
			if listening != listen {
				continue
			}
			fmt.Fprintf(tio.out, "%-5s %-45s %-45s %s\n", f.proto, s.local, s.remote, state)
		}
	}
	return nil
}

type socket struct{ local, remote, state string }

func readSockets(file string) ([]socket, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []socket
	s := bufio.NewScanner(f)
	s.Scan() // the header
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 4 {
			continue
		}
		local, err1 := procAddr(fields[1])
		remote, err2 := procAddr(fields[2])
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, socket{local: local, remote: remote, state: fields[3]})
	}
	return out, s.Err()
}

// procAddr reads /proc/net's HEXIP:HEXPORT: the address is in the
// kernel's byte order, 32-bit word by word.
func procAddr(s string) (string, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return "", fmt.Errorf("bad address %q", s)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw)%4 != 0 {
		return "", fmt.Errorf("bad address %q", s)
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(ip[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return "", fmt.Errorf("bad port %q", s)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port))), nil
}
