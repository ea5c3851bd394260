package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkg/sftp"

	"github.com/termgate/termgate/holder"
)

// TestSFTPServesFilesOnItsStream runs serveSFTP over two pipes, as an exec's
// stdin and stdout, and uses it with pkg/sftp's client: a file written
// through it reads back byte for byte, and relative paths start in the
// working directory.
func TestSFTPServesFilesOnItsStream(t *testing.T) {
	dir := t.TempDir()
	inR, inW := io.Pipe()   // the client's requests: the holder's stdin
	outR, outW := io.Pipe() // the replies: its stdout
	done := make(chan error, 1)
	go func() { done <- serveSFTP(inR, outW, dir, false) }()
	c, err := sftp.NewClientPipe(readyFirst(t, outR), inW)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20+17)
	_, _ = rand.Read(data)
	f, err := c.Create("up.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "up.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the uploaded file differs (%d bytes, err %v)", len(got), err)
	}
	wd, err := c.Getwd()
	if err != nil || wd != dir {
		t.Fatalf("working directory %q (err %v), want %q", wd, err, dir)
	}
	_ = c.Close()
	if err := <-done; err != nil {
		t.Fatalf("serveSFTP after the client's end: %v", err)
	}
}

// TestDialCopiesBothWaysWithHalfClose dials an echo server: what goes in
// comes back, stdin's EOF half-closes the connection (the echo server then
// ends its side), and dial returns once both directions ended.
func TestDialCopiesBothWaysWithHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = io.Copy(c, c) // until the half-close
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.Close()
	}()
	data := make([]byte, 2<<20)
	_, _ = rand.Read(data)
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- dial(ln.Addr().String(), bytes.NewReader(data), outW) }()
	got, err := io.ReadAll(holder.NewDialReader(readyFirst(t, outR)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("echoed %d bytes of %d (err %v)", len(got), len(data), err)
	}
	if err := <-done; err != nil {
		t.Fatalf("dial: %v", err)
	}
	<-served
}

// TestDialPassesThePeersEndFirst: the peer answers and ends its side
// before the gateway's stdin ends; the gateway reads the answer and then
// EOF (the frame) while stdin stays open, and what it sends afterwards
// still reaches the peer, whose read ends with stdin's EOF.
func TestDialPassesThePeersEndFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	heard := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			heard <- nil
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "answer")
		_ = c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c)
		heard <- b
	}()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- dial(ln.Addr().String(), inR, outW) }()
	got, err := io.ReadAll(holder.NewDialReader(readyFirst(t, outR)))
	if err != nil || string(got) != "answer" {
		t.Fatalf("read %q (err %v), want the answer and EOF", got, err)
	}
	if _, err := io.WriteString(inW, "after the peer's end"); err != nil {
		t.Fatal(err)
	}
	_ = inW.Close()
	if b := <-heard; string(b) != "after the peer's end" {
		t.Fatalf("the peer read %q", b)
	}
	if err := <-done; err != nil {
		t.Fatalf("dial: %v", err)
	}
}

// TestDialReportsAReset: a peer that resets the connection is reported in
// an error frame, which the gateway's reader returns as a DialPeerError.
func TestDialReportsAReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		// The reset comes after the client's first byte: a reset during
		// the connect would fail the dial itself.
		_, _ = c.Read(make([]byte, 1))
		_ = c.(*net.TCPConn).SetLinger(0) // close sends RST
		_ = c.Close()
	}()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- dial(ln.Addr().String(), inR, outW) }()
	r := holder.NewDialReader(readyFirst(t, outR))
	if _, err := inW.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(r)
	var pe *holder.DialPeerError
	if !errors.As(err, &pe) || !strings.Contains(pe.Reason, "reset") {
		t.Fatalf("read after a reset: %v, want a DialPeerError", err)
	}
	_ = inW.Close()
	if err := <-done; err == nil {
		t.Fatal("dial after a reset: no error")
	}
}

// TestDialFailureSaysWhy: nothing listens, so dial fails with the address
// in its error (main prints it on stderr and exits 1).
func TestDialFailureSaysWhy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, outW := io.Pipe()
	err = dial(addr, strings.NewReader(""), outW)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("dial to a closed port: %v", err)
	}
	if err := dial("no-port", strings.NewReader(""), outW); err == nil || !strings.Contains(err.Error(), "HOST:PORT") {
		t.Fatalf("dial without a port: %v", err)
	}
}

// readyFirst reads the ready line off r and returns what follows.
func readyFirst(t *testing.T, r io.Reader) io.Reader {
	t.Helper()
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	if err != nil || line != holder.ToolReady+"\n" {
		t.Fatalf("first line %q (err %v), want the ready line", line, err)
	}
	return br
}
