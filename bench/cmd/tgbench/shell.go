package main

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// markerSeq numbers markers across the whole run: a replay may carry the
// markers of earlier commands, so a marker must never be printed twice.
var markerSeq atomic.Int64

// shell drives an interactive /bin/sh through a term. Every command ends
// with a printf of a fresh marker; the output is read until the marker, so
// the stream is in step with the shell after every command. The marker is
// built by printf from two pieces, so the echo of the command line never
// contains it.
type shell struct {
	term
	path string
	ctx  context.Context
	buf  []byte
	stop func() bool // cancels the close-on-cancel hook

	reads, bytes int64 // Read calls and bytes in readUntil, for the mean chunk size
}

func newShell(ctx context.Context, t term, path string) *shell {
	s := &shell{term: t, path: path, ctx: ctx, buf: make([]byte, 64<<10)}
	s.stop = context.AfterFunc(ctx, func() { t.Close() })
	return s
}

// openShell dials path, waits for the shell's first output and puts the
// stream in step.
func openShell(ctx context.Context, e *env, path, instance string) (*shell, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	t, err := dial(dctx, e, path, instance)
	cancel()
	if err != nil {
		return nil, err
	}
	s := newShell(ctx, t, path)
	if _, _, err := s.command("", 10*time.Second); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: first command: %w", path, err)
	}
	return s, nil
}

func (s *shell) Close() error {
	s.stop()
	if s.term == nil {
		return nil
	}
	return s.term.Close()
}

// bound sets the deadline for what follows: d from now, or the run's
// deadline when that comes first.
func (s *shell) bound(d time.Duration) {
	dl := time.Now().Add(d)
	if cd, ok := s.ctx.Deadline(); ok && cd.Before(dl) {
		dl = cd
	}
	_ = s.SetDeadline(dl)
}

// marker returns a fresh marker of the given kind and the printf command
// that prints it.
func marker(kind string) (m []byte, printf string) {
	n := markerSeq.Add(1)
	return fmt.Appendf(nil, "TGB%d%s", n, kind), fmt.Sprintf("printf 'TGB%%d%s\\n' %d", kind, n)
}

// send types cmd followed by the printf of a marker of kind and Enter.
func (s *shell) send(cmd, kind string) ([]byte, error) {
	m, printf := marker(kind)
	line := printf
	if cmd != "" {
		line = cmd + "; " + printf
	}
	_, err := s.Write([]byte(line + "\r"))
	return m, err
}

// command runs cmd and reads up to its end marker; it returns the bytes
// read and the time from sending the command to reading the marker.
func (s *shell) command(cmd string, timeout time.Duration) (int64, time.Duration, error) {
	s.bound(timeout)
	t0 := time.Now()
	m, err := s.send(cmd, "END")
	if err != nil {
		return 0, 0, err
	}
	n, err := s.readUntil(m)
	d := time.Since(t0)
	if err == nil {
		// No deadline while the shell waits for its next command: a
		// deadline that passes breaks an SSH or WebSocket connection for
		// good (the SSH path failed this way while the OpenSSH anchor or
		// the docker CLI took their time between two commands).
		_ = s.SetDeadline(time.Time{})
	}
	return n, d, err
}

// readUntil reads until m has been seen and returns the bytes read. Bytes
// after m in the same read are dropped with it.
func (s *shell) readUntil(m []byte) (int64, error) {
	return s.scanUntil(newScanner(m))
}

// scanUntil reads until sc has found its marker (sc may have been fed
// already).
func (s *shell) scanUntil(sc *scanner) (int64, error) {
	m := sc.m
	var total int64
	if sc.found {
		return 0, nil
	}
	for {
		n, err := s.Read(s.buf)
		total += int64(n)
		s.reads++
		s.bytes += int64(n)
		if n > 0 && sc.feed(s.buf[:n]) {
			return total, nil
		}
		if err != nil {
			if s.ctx.Err() != nil {
				return total, fmt.Errorf("%w (after %d bytes, waiting for %s)", context.Cause(s.ctx), total, m)
			}
			return total, fmt.Errorf("after %d bytes, waiting for %s: %w", total, m, err)
		}
	}
}

// scanner finds a marker in a stream read in chunks of any size.
type scanner struct {
	found bool
	m     []byte
	win   []byte // the last len(m)-1 bytes seen
	tmp   []byte
}

func newScanner(m []byte) *scanner {
	k := len(m) - 1
	return &scanner{m: m, win: make([]byte, 0, k), tmp: make([]byte, 0, 2*k)}
}

// feed reports whether the marker ends in p (or straddles into it), or
// was found before.
func (s *scanner) feed(p []byte) bool {
	if !s.found {
		s.found = s.scan(p)
	}
	return s.found
}

func (s *scanner) scan(p []byte) bool {
	k := len(s.m) - 1
	if len(s.win) > 0 {
		s.tmp = append(append(s.tmp[:0], s.win...), p[:min(len(p), k)]...)
		if bytes.Contains(s.tmp, s.m) {
			return true
		}
	}
	if bytes.Contains(p, s.m) {
		return true
	}
	if len(p) >= k {
		s.win = append(s.win[:0], p[len(p)-k:]...)
	} else {
		s.tmp = append(append(s.tmp[:0], s.win...), p...)
		s.win = append(s.win[:0], s.tmp[max(0, len(s.tmp)-k):]...)
	}
	return false
}

// firstOutput reads the first output after a dial: one read, or with
// untilPrompt until the shell's prompt has arrived.
func (s *shell) firstOutput(untilPrompt bool) error {
	var seen []byte
	for {
		n, err := s.Read(s.buf)
		if n > 0 && !untilPrompt {
			return nil
		}
		// Keep a short tail: the prompt may be split across reads, and an
		// error shows what came last.
		seen = append(seen, s.buf[:n]...)
		if promptEnd(seen) {
			return nil
		}
		if len(seen) > 200 {
			seen = seen[len(seen)-200:]
		}
		if err != nil {
			return fmt.Errorf("no output (or no prompt) after attaching (last bytes %q): %w", seen, err)
		}
	}
}

// readAtLeast reads until n bytes have arrived.
func (s *shell) readAtLeast(n int) error {
	got := 0
	for got < n {
		k, err := s.Read(s.buf)
		got += k
		if err != nil && got < n {
			return fmt.Errorf("the replay ended after %d of %d bytes: %w", got, n, err)
		}
	}
	return nil
}

// promptEnd reports whether p holds the end of a prompt: "# " or "$ " as
// the shell prints it, or "#" or "$" at the end of a row as a termgate
// snapshot draws it (trailing blanks become a line end or a cursor move).
func promptEnd(p []byte) bool {
	for _, m := range []string{"# ", "$ ", "#\x1b", "$\x1b", "#\r", "$\r"} {
		if bytes.Contains(p, []byte(m)) {
			return true
		}
	}
	return false
}
