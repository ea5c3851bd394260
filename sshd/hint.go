package sshd

import (
	"net"
	"strconv"
	"strings"
)

// comeBack is the command that brings this client back to what it left
// (the detach notice prints it, so it must work when copied): the user
// name it connected as, -p with the port it connected to (none for 22),
// and Config.PublicHost, else the address it connected to (localhost for
// a loopback one). The client never sends the host name it used; behind a
// NAT or a proxy only PublicHost (--public-host) gets it right.
func (s *Server) comeBack(sess *session, name string) string {
	user := sess.user
	if user == "" || strings.IndexFunc(user, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		user = name // an odd user name is not echoed into the client's terminal
	}
	host, port := "HOST", ""
	if sess.conn != nil {
		if a, ok := sess.conn.nc.LocalAddr().(*net.TCPAddr); ok {
			host = a.IP.String()
			if a.IP.IsLoopback() {
				host = "localhost"
			}
			if a.Port != 22 {
				port = "-p " + strconv.Itoa(a.Port) + " "
			}
		}
	}
	if s.cfg.PublicHost != "" {
		host = s.cfg.PublicHost
	}
	return "ssh -t " + port + user + "@" + host
}
