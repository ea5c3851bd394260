package holder

import (
	"bytes"
	"testing"
	"time"
)

// A gateway that falls behind a burst of output (its exec stream slower
// than the shell) gets every byte once it reads again: the holder holds
// the shell back instead of cutting the gateway off, which cut every
// client of a durable session during a big cat or a build log.
func TestGatewayBehindABurstLosesNothing(t *testing.T) {
	sock, _ := startHolder(t, time.Minute)
	a := dial(t, sock, Version)
	a.attach(AttachMsg{})
	a.send(ClientsFrame(1))
	a.until("$ ")
	const n = 20 << 20 // well past connQueue
	a.input("head -c 20971520 /dev/zero | tr '\\0' x; echo; echo DO\"\"NE\n")
	time.Sleep(2 * time.Second) // take nothing for a while: the queue would fill
	var got int
	for {
		f := a.next()
		if f.Type != TypeOutput {
			continue
		}
		off, data, err := DecodeOutput(f)
		if err != nil {
			t.Fatal(err)
		}
		if off != a.off {
			t.Fatalf("output at offset %d, want %d (lost or doubled bytes)", off, a.off)
		}
		a.off = off + int64(len(data))
		got += bytes.Count(data, []byte("x"))
		a.out.Write(data)
		if a.out.Len() > 4096 {
			tail := append([]byte(nil), a.out.Bytes()[a.out.Len()-64:]...)
			a.out.Reset()
			a.out.Write(tail)
		}
		if bytes.Contains(a.out.Bytes(), []byte("DONE")) {
			break
		}
	}
	if got < n {
		t.Fatalf("got %d of the %d bytes", got, n)
	}
}

// A gateway that takes nothing at all holds the shell back for connStall
// at most: then it is dropped, and another gateway goes on getting output.
func TestStuckGatewayIsDroppedAfterTheStall(t *testing.T) {
	old := connStall
	connStall = time.Second
	t.Cleanup(func() { connStall = old })
	sock, _ := startHolder(t, time.Minute)
	stuck := dial(t, sock, Version)
	stuck.attach(AttachMsg{})
	live := dial(t, sock, Version)
	live.attach(AttachMsg{})
	live.send(ClientsFrame(1))
	live.until("$ ")
	live.input("head -c 12582912 /dev/zero | tr '\\0' x; echo; echo DO\"\"NE\n")
	start := time.Now()
	for !bytes.Contains(live.out.Bytes(), []byte("DONE")) {
		f := live.next()
		if f.Type != TypeOutput {
			continue
		}
		_, data, err := DecodeOutput(f)
		if err != nil {
			t.Fatal(err)
		}
		live.out.Write(data)
		if live.out.Len() > 4096 {
			tail := append([]byte(nil), live.out.Bytes()[live.out.Len()-64:]...)
			live.out.Reset()
			live.out.Write(tail)
		}
	}
	t.Logf("12 MiB past a stuck gateway in %s", time.Since(start).Round(time.Millisecond))
	// The stuck gateway was cut: what it reads ends, it does not hang.
	_ = stuck.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1<<20)
	for {
		if _, err := stuck.nc.Read(buf); err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				t.Fatal("the stuck gateway was never dropped")
			}
			return
		}
	}
}
