package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"sync"
	"time"
)

// caseNeverReading streams StreamBytes past NeverReaders clients (half SSH,
// half WebSocket) that never read, to a client that reads everything. The
// stuck clients must be dropped and everything they held released within
// seconds while they keep their connections open; the reader must get all
// of it; the shell must not be slowed much; RSS stays bounded. The gateway
// runs --replay raw: with the screen replay (the default) a client that
// falls behind is brought forward instead of dropped (contract, session
// semantics 8), which sessions, websock, sshd and e2e test, and bench
// measures.
func caseNeverReading(ctx context.Context, r *runner, res *result) {
	g, err := r.e.newGateway("slow", r.e.main, "--replay", "raw")
	if !res.check(err, "prepare a gateway") {
		return
	}
	if !res.check(g.start(ctx), "start the gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "slow", 1)
	if !res.check(err, "start a container") {
		return
	}
	inst := names[0]
	reader, err := g.attachSSH(ctx, 0, inst)
	if !res.check(err, "attach the reader") {
		return
	}
	defer reader.Leave(closeClean)
	streamCmd := func(n int64) string { return fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", n) }
	bound := 5*time.Minute + time.Duration(r.cfg.StreamBytes>>20)*time.Second
	// The rate with no other client: a quarter of the stream is enough.
	aloneBytes := r.cfg.StreamBytes / 4
	t0 := time.Now()
	if _, err := command(reader, streamCmd(aloneBytes), bound); !res.check(err, "stream with no other client") {
		return
	}
	alone := time.Since(t0)
	base, ok := r.baseline(ctx, g, res)
	if !ok {
		return
	}

	// The clients that never read: SSH ones do not read their channel (the
	// window fills), WebSocket ones do not read the socket (TCP fills).
	var stuck []term
	defer func() {
		for _, t := range stuck {
			_ = t.Leave(closeRST)
		}
	}()
	for i := range r.cfg.NeverReaders {
		var t term
		if i%2 == 0 {
			t, err = g.attachSSH(ctx, 1+i/2, inst)
		} else {
			t, err = g.attachWS(ctx, inst)
		}
		if !res.check(err, "attach a client that never reads") {
			return
		}
		stuck = append(stuck, t)
	}
	if !res.check(g.waitClients(ctx, inst, 1+len(stuck), settleWait), "all attached") {
		return
	}
	logFrom := g.logLen()

	peak := base.RSSKiB
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, _, err := procStatus(g.pid()); err == nil && rss > peak {
				peak = rss
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	t0 = time.Now()
	_, serr := command(reader, streamCmd(r.cfg.StreamBytes), bound)
	with := time.Since(t0)
	close(stop)
	wg.Wait()
	res.PeakRSS = peak
	if !res.check(serr, "the reader streams past the clients that never read") {
		return
	}
	mbps := func(n int64, d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }
	res.notef("alone %.0f MB at %.1f MB/s; past %d never-reading clients %.0f MB at %.1f MB/s (%.2fx the rate alone); peak RSS %.1f MiB (+%.1f)",
		float64(aloneBytes)/1e6, mbps(aloneBytes, alone), len(stuck), float64(r.cfg.StreamBytes)/1e6, mbps(r.cfg.StreamBytes, with),
		mbps(r.cfg.StreamBytes, with)/mbps(aloneBytes, alone), mib(peak), mib(peak-base.RSSKiB))
	// The per-client queue is 16 MiB; allow it for each stuck client plus
	// room for the runtime.
	if limit := int64(32<<10) + int64(len(stuck))*24<<10; peak-base.RSSKiB > limit {
		res.failf("RSS grew by %.1f MiB while output streamed past %d stuck clients (bound %.0f MiB)", mib(peak-base.RSSKiB), len(stuck), mib(limit))
	}
	// Dropped: the session has only the reader left, and the gateway holds
	// nothing for the stuck clients although they keep their connections.
	if err := g.waitClients(ctx, inst, 1, settleWait); err != nil {
		res.failf("the clients that never read were not all dropped: %v", err)
	}
	if s, ok := g.settle(ctx, base, settleWait); !ok {
		res.failf("%s after the stream, the gateway still holds the dropped clients' connections: goroutines %d -> %d, descriptors %d -> %d",
			settleWait, base.Goroutines, s.Goroutines, base.FDs, s.FDs)
	}
	k, _ := g.countLog(logFrom, "client dropped")
	notices := 0
	for _, t := range stuck {
		if w, ok := t.(*wsTerm); ok {
			if ev, err := w.waitEvent("error", 5*time.Second); err == nil && bytes.Contains([]byte(ev.Message), []byte("behind")) {
				notices++
			}
		}
	}
	res.notef("%d drops logged as falling behind; %d of %d WebSocket clients got the notice when they finally read", k, notices, len(stuck)/2)
	for _, t := range stuck {
		_ = t.Leave(closeRST)
	}
	stuck = nil
	_ = reader.Leave(closeClean)
	res.check(g.waitClients(ctx, inst, 0, settleWait), "all clients detached")
	r.finish(ctx, g, res, base)
	r.oneShell(ctx, r.e.main, inst, res)
}

var sumRE = regexp.MustCompile(`\b([0-9a-f]{64})\s+/tmp/paste`)

// casePaste pastes PasteSizes bytes of base64 text (76-column lines) into
// `cat > FILE` with echo off, alternating SSH and WebSocket, and compares
// sha256sum in the container with the sum of what was sent.
func casePaste(ctx context.Context, r *runner, res *result) {
	g, err := r.mainGateway(ctx)
	if !res.check(err, "start the gateway") {
		return
	}
	names, err := r.e.startContainers(ctx, r.e.main, "paste", 1)
	if !res.check(err, "start a container") {
		return
	}
	inst := names[0]
	if !res.check(r.touch(ctx, g, inst), "create the session") {
		return
	}
	base, ok := r.baseline(ctx, g, res)
	if !ok {
		return
	}
	good := 0
	var rates []string
	for i, size := range r.cfg.PasteSizes {
		if ctx.Err() != nil {
			break
		}
		var t term
		if i%2 == 0 {
			t, err = g.attachSSH(ctx, 0, inst)
		} else {
			t, err = g.attachWS(ctx, inst)
		}
		if !res.check(err, "attach") {
			return
		}
		d, err := paste(t, i, size)
		_ = t.Leave(closeClean)
		if err != nil {
			res.failf("paste %d (%d bytes over %s): %v", i, size, t.Via(), err)
			continue
		}
		good++
		rates = append(rates, fmt.Sprintf("%.1f", float64(size)/1e6/d.Seconds()))
	}
	res.notef("%d of %d pastes (%v bytes, SSH and WebSocket in turn) arrived byte-exact; MB/s %v", good, len(r.cfg.PasteSizes), r.cfg.PasteSizes, rates)
	res.check(g.waitClients(ctx, inst, 0, settleWait), "all clients detached")
	r.finish(ctx, g, res, base)
	r.oneShell(ctx, r.e.main, inst, res)
}

// paste sends size bytes of base64 lines into cat and checks the sum.
func paste(t term, i, size int) (time.Duration, error) {
	data := pasteData(size)
	sum := sha256.Sum256(data)
	if _, err := command(t, "stty -echo", 20*time.Second); err != nil {
		return 0, err
	}
	file := fmt.Sprintf("/tmp/paste%d", i)
	_ = t.SetDeadline(time.Now().Add(2*time.Minute + time.Duration(size>>20)*10*time.Second))
	start := time.Now()
	if _, err := t.Write([]byte("cat > " + file + "\r")); err != nil {
		return 0, err
	}
	for off := 0; off < len(data); off += 32 << 10 {
		if _, err := t.Write(data[off:min(off+32<<10, len(data))]); err != nil {
			return 0, fmt.Errorf("after %d bytes: %w", off, err)
		}
	}
	if _, err := t.Write([]byte{4}); err != nil { // ^D at the start of a line: EOF
		return 0, err
	}
	out, err := commandOut(t, "stty echo; sha256sum "+file+"; rm -f "+file, 2*time.Minute)
	took := time.Since(start)
	if err != nil {
		return took, err
	}
	m := sumRE.FindSubmatch(out)
	if m == nil {
		return took, fmt.Errorf("no sha256sum in the output %q", tail(string(out), 300))
	}
	if want := hex.EncodeToString(sum[:]); string(m[1]) != want {
		return took, fmt.Errorf("sha256 in the container %s, sent %s", m[1], want)
	}
	return took, nil
}

// pasteData is size bytes of random base64 text in 76-column lines, the
// last one ending in a newline.
func pasteData(size int) []byte {
	raw := make([]byte, size)
	_, _ = rand.Read(raw)
	enc := base64.StdEncoding.EncodeToString(raw)
	out := make([]byte, 0, size+size/76+1)
	for len(out) < size {
		line := min(76, size-len(out)-1)
		if line <= 0 {
			break
		}
		out = append(out, enc[:line]...)
		enc = enc[line:]
		out = append(out, '\n')
	}
	for len(out) < size {
		out = append(out, '\n')
	}
	return out
}

// commandOut is command that returns what was read (the last MiB).
func commandOut(t term, cmd string, d time.Duration) ([]byte, error) {
	_ = t.SetDeadline(time.Now().Add(d))
	defer t.SetDeadline(time.Time{})
	m, printf := marker()
	line := joinCmd(cmd, printf)
	if _, err := t.Write([]byte(line + "\r")); err != nil {
		return nil, err
	}
	var acc []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := t.Read(buf)
		acc = append(acc, buf[:n]...)
		if bytes.Contains(acc, m) {
			return acc, nil
		}
		if err != nil {
			return acc, fmt.Errorf("%s: waiting for the output of %q: %w", t.Via(), line, err)
		}
		if len(acc) > 1<<20 {
			acc = acc[len(acc)-(1<<19):]
		}
	}
}
