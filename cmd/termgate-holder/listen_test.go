package main

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/holder"
)

// TestListenHandsEachConnectionToItsFetch runs listen on a kernel-chosen
// port and fetch for the connection it announces, each over pipes as an
// exec's stdin and stdout: the bytes go both ways, each side's end is
// passed on (the instance's client half-closes and still reads the
// answer), and the listener's stdin ending closes the port.
func TestListenHandsEachConnectionToItsFetch(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = filepath.Join(t.TempDir(), "l.sock")
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- listen([]string{network, addr}, inR, outW) }()
			lines := bufio.NewReader(outR)
			readLine := func() []string {
				t.Helper()
				l, err := lines.ReadString('\n')
				if err != nil {
					t.Fatalf("listen's output: %v", err)
				}
				return strings.Fields(l)
			}
			if l := readLine(); strings.Join(l, " ") != holder.ToolReady {
				t.Fatalf("first line %q", l)
			}
			bound := readLine()
			if len(bound) != 3 || bound[0] != "bound" {
				t.Fatalf("bound line %q", bound)
			}
			c, err := net.Dial(network, bound[1])
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conn := readLine()
			if len(conn) != 4 || conn[0] != "conn" {
				t.Fatalf("conn line %q", conn)
			}
			fInR, fInW := io.Pipe()
			fOutR, fOutW := io.Pipe()
			fdone := make(chan error, 1)
			go func() { fdone <- fetch([]string{bound[2], conn[1]}, fInR, fOutW) }()
			fr := bufio.NewReader(fOutR)
			if l, err := fr.ReadString('\n'); err != nil || l != holder.ToolReady+"\n" {
				t.Fatalf("fetch's ready line %q: %v", l, err)
			}
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			_ = c.(interface{ CloseWrite() error }).CloseWrite()
			got, err := io.ReadAll(holder.NewDialReader(fr))
			if err != nil || string(got) != "ping" {
				t.Fatalf("fetched %q, err %v (want ping and the peer's EOF)", got, err)
			}
			if _, err := fInW.Write([]byte("pong")); err != nil {
				t.Fatal(err)
			}
			_ = fInW.Close()
			back, err := io.ReadAll(c)
			if err != nil || string(back) != "pong" {
				t.Fatalf("the instance's client read %q, err %v", back, err)
			}
			if err := <-fdone; err != nil {
				t.Fatalf("fetch: %v", err)
			}
			// A second fetch of the same token finds nothing.
			if _, err := fetchConn(bound[2], conn[1]); err == nil {
				t.Fatal("a token was good twice")
			}
			_ = inW.Close()
			go func() { _, _ = io.Copy(io.Discard, lines) }()
			if err := <-done; err != nil {
				t.Fatalf("listen: %v", err)
			}
			if c, err := net.Dial(network, bound[1]); err == nil {
				_ = c.Close()
				t.Fatal("the port still accepts after the listener's end")
			}
		})
	}
}
