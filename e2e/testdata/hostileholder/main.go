// Command hostileholder plays a hostile holder inside an instance (red team
// round 3, H3 and M3): it listens on a holder socket and answers gateways
// with what no genuine holder sends. It reads the socket with read(2), so
// the attach process's passed descriptors are dropped and it bridges.
//
//	hostileholder SOCKET huge KEY          every replay announces 2^62 bytes
//	hostileholder SOCKET reset-loop KEY    an empty replay, then a reset 50 ms later, forever
//	hostileholder SOCKET reset-then-huge KEY  the first connection resets after 6 s; then huge
//	hostileholder SOCKET silent KEY        reads the gateway's hello, never answers (round 4, L4)
//
// KEY (hex) is the instance's holder key, which root in the instance can
// read from its genuine holder's memory: with it this holder proves itself
// as a genuine one would, and the gateway gets as far as its answers.
//
// Each connection is logged to stdout (one line), so a test can count them.
package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/termgate/termgate/holder"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: hostileholder SOCKET huge|reset-loop|reset-then-huge KEY")
		os.Exit(2)
	}
	sock, mode := os.Args[1], os.Args[2]
	key, err := hex.DecodeString(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, "KEY:", err)
		os.Exit(2)
	}
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var n atomic.Int64
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		i := n.Add(1)
		fmt.Printf("connection %d\n", i)
		go serve(c, mode, i, key)
	}
}

func frame(typ byte, m any) []byte {
	b, err := holder.ControlFrame(typ, m)
	if err != nil {
		panic(err)
	}
	return b
}

func serve(c net.Conn, mode string, i int64, key []byte) {
	defer c.Close()
	r := holder.NewReader(c)
	f, err := r.ReadFrame() // the gateway's hello
	if err != nil {
		return
	}
	if mode == "silent" { // red team round 4, L4: accept, never answer
		_, _ = io.Copy(io.Discard, c)
		return
	}
	var gw holder.HelloMsg
	_ = holder.DecodeControl(f, &gw)
	id := fmt.Sprintf("%016x", 0xcc+i)
	nonce := fmt.Sprintf("%032x", i)
	hello := holder.HelloMsg{Proto: holder.Version, Session: id, PID: 1, Cols: 80, Rows: 24,
		Nonce: nonce, Proof: holder.HolderProof(key, gw.Nonce, nonce)}
	if _, err := c.Write(frame(holder.TypeHello, hello)); err != nil {
		return
	}
	if _, err := r.ReadFrame(); err != nil { // the attach
		return
	}
	huge := mode == "huge" || mode == "reset-then-huge" && i > 1
	if huge {
		_, _ = c.Write(frame(holder.TypeReplay, holder.ReplayMsg{Session: id, Offset: 4611686018427387904}))
		time.Sleep(5 * time.Second)
		return
	}
	if _, err := c.Write(frame(holder.TypeReplay, holder.ReplayMsg{Session: id})); err != nil {
		return
	}
	wait := 50 * time.Millisecond
	if mode == "reset-then-huge" {
		wait = 6 * time.Second
	}
	time.Sleep(wait)
	next := fmt.Sprintf("%016x", 0xcc+i+1)
	_, _ = c.Write(frame(holder.TypeReset, holder.ResetMsg{OldSession: id, NewSession: next, By: "x"}))
}
