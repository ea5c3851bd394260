package holder

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A tmp cleaner deletes the holder's socket, or its whole directory
// (issue 20, D3): the holder listens there again, so a gateway that
// connects afterwards reaches the same shell; the connection made before
// is not disturbed.
func TestHolderListensAgainAfterItsSocketIsDeleted(t *testing.T) {
	old := socketCheckEvery
	socketCheckEvery = 20 * time.Millisecond
	t.Cleanup(func() { socketCheckEvery = old })
	sock, _ := startHolder(t, time.Minute)
	dir := filepath.Dir(sock)
	a := dial(t, sock, Version)
	a.attach(AttachMsg{})
	pid := strconv.Itoa(a.hello.PID)
	// answers says the shell behind g is pid: it echoes its $$.
	answers := func(g *gw, tag string) {
		t.Helper()
		g.input("echo " + tag + "=$$\n")
		g.until(tag + "=" + pid + "\r\n")
	}
	answers(a, "first")
	for _, c := range []struct {
		what string
		rm   func() error
	}{
		{"the socket", func() error { return os.Remove(sock) }},
		{"the directory", func() error { return os.RemoveAll(dir) }},
	} {
		if err := c.rm(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			// The socket file appears at bind(2), a moment before
			// listen(2): wait until it takes a connection.
			if c, err := net.Dial("unix", sock); err == nil {
				_ = c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after deleting %s the holder did not listen again within 5 s", c.what)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st, err := os.Lstat(dir); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("after deleting %s: the directory %v, %v; want it made again with mode 0700", c.what, st, err)
		}
		b := dial(t, sock, Version)
		if b.hello.Session != "s1" || strconv.Itoa(b.hello.PID) != pid {
			t.Fatalf("after deleting %s the socket answers for %+v, want session s1, shell %s", c.what, b.hello, pid)
		}
		b.attach(AttachMsg{})
		answers(b, "again")
	}
	answers(a, "still") // the gateway connected before the deletions
}
