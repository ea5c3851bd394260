package docker

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/termgate/termgate/sessions"
)

// TestMeasureHeldStream (TERMGATE_MEASURE_HOLDER=1) compares a held
// session's stream with an ordinary one's at the backend, without a
// listener in between: keystroke echo (one byte to cat on a cooked
// terminal, whose echo the kernel sends back) and throughput (a shell
// printing TERMGATE_MEASURE_BYTES, default 16 MB), in interleaved rounds
// on one container, so a busy machine weighs on both alike. It prints the
// medians and the paired ratios; it asserts nothing (performance is
// measured, never asserted).
func TestMeasureHeldStream(t *testing.T) {
	if os.Getenv("TERMGATE_MEASURE_HOLDER") != "1" {
		t.Skip("set TERMGATE_MEASURE_HOLDER=1 to measure")
	}
	needEngine(t)
	total := 16_000_000
	if n, err := strconv.Atoi(os.Getenv("TERMGATE_MEASURE_BYTES")); err == nil {
		total = n
	}
	const rounds, keys = 5, 200
	name, _ := runContainer(t, "--label", runLabel)
	held, _ := durableBackend(t, Config{})
	plain := newBackend(t, Config{Label: runLabel})
	inst := lookup(t, held, name)
	ctx := testContext(t)
	start := func(b *Backend) sessions.Process {
		p, err := b.Start(ctx, inst, sessions.StartSpec{SessionID: randomHex(8), Size: sessions.DefaultSize})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Kill(ctx) })
		return p
	}
	// readUntil reads p until want (in the output it reads), counting bytes.
	buf := make([]byte, 64<<10)
	readUntil := func(p sessions.Process, want []byte) int {
		var n int
		var tail []byte
		deadline := time.AfterFunc(60*time.Second, func() { _ = p.Kill(ctx) })
		defer deadline.Stop()
		for !bytes.Contains(tail, want) {
			m, err := p.Read(buf)
			if err != nil {
				t.Fatalf("read: %v; waiting for %q after %q", err, want, tail)
			}
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			n += m
			tail = append(tail, buf[:m]...)
			if len(tail) > 256 {
				tail = tail[len(tail)-256:]
			}
		}
		return n
	}
	write := func(p sessions.Process, s string) {
		if _, err := p.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	paths := []struct {
		name string
		b    *Backend
	}{{"in-gateway", plain}, {"held", held}}
	if only := os.Getenv("TERMGATE_MEASURE_ONLY"); only != "" { // for a profile of one path
		paths = slices.DeleteFunc(paths, func(p struct {
			name string
			b    *Backend
		}) bool {
			return p.name != only
		})
	}
	echo := map[string][]time.Duration{}
	rate := map[string][]float64{}
	for r := range rounds {
		for _, path := range paths {
			p := start(path.b)
			write(p, "PS1='$ '; echo RE\"\"ADY\n")
			readUntil(p, []byte("READY\r\n"))
			write(p, "head -c "+strconv.Itoa(total)+" /dev/zero | tr '\\0' x; echo; echo DO\"\"NE\n")
			t0 := time.Now()
			n := readUntil(p, []byte("DONE\r\n"))
			rate[path.name] = append(rate[path.name], float64(n)/time.Since(t0).Seconds()/1e6)
			write(p, "exec cat\n")
			time.Sleep(200 * time.Millisecond)
			readUntil(p, []byte("exec cat\r\n"))
			for range keys {
				t0 := time.Now()
				write(p, "k")
				readUntil(p, []byte("k"))
				echo[path.name] = append(echo[path.name], time.Since(t0))
			}
			_ = p.Kill(ctx)
		}
		for _, path := range paths {
			t.Logf("round %d: %s %.1f MB/s, echo p50 %v", r+1, path.name, rate[path.name][r], median(echo[path.name][r*keys:]))
		}
	}
	if len(paths) < 2 {
		return
	}
	var ratios []float64
	for i := range rounds {
		ratios = append(ratios, rate["held"][i]/rate["in-gateway"][i])
	}
	slices.Sort(ratios)
	t.Logf("throughput median: in-gateway %.1f MB/s, held %.1f MB/s; paired ratio min/med/max %.2f / %.2f / %.2f",
		medianF(rate["in-gateway"]), medianF(rate["held"]), ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1])
	t.Logf("echo p50: in-gateway %v, held %v (+%v)", median(echo["in-gateway"]), median(echo["held"]),
		median(echo["held"])-median(echo["in-gateway"]))
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianF(f []float64) float64 {
	s := slices.Clone(f)
	slices.Sort(s)
	return s[len(s)/2]
}
