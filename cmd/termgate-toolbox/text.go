package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// Small text utilities: the options people type, not every one POSIX has.

// maxLine bounds one line read (grep, head, tail): a binary file without
// newlines must not take the memory of the instance's service.
const maxLine = 1 << 20

// open opens name relative to dir ("-" is stdin).
func (tio toolIO) open(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(tio.in), nil
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(tio.dir, name)
	}
	return os.Open(name)
}

// eachInput calls fn for every file of names (stdin when none), reporting
// a file that cannot be opened and going on with the rest.
func (tio toolIO) eachInput(cmd string, names []string, fn func(name string, r io.Reader) error) error {
	if len(names) == 0 {
		names = []string{"-"}
	}
	failed := false
	for _, n := range names {
		f, err := tio.open(n)
		if err != nil {
			fmt.Fprintf(tio.err, "%s: %v\n", cmd, err)
			failed = true
			continue
		}
		err = fn(n, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	if failed {
		return interp.ExitStatus(1)
	}
	return nil
}

func newScanner(r io.Reader) *bufio.Scanner {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), maxLine)
	return s
}

// count parses "-n N", "-nN" or "-N" at the head of args.
func count(args []string, def int) (int, []string, error) {
	if len(args) == 0 {
		return def, args, nil
	}
	a := args[0]
	switch {
	case a == "-n" && len(args) > 1:
		n, err := strconv.Atoi(strings.TrimPrefix(args[1], "+"))
		return n, args[2:], err
	case strings.HasPrefix(a, "-n"):
		n, err := strconv.Atoi(a[2:])
		return n, args[1:], err
	case len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9':
		n, err := strconv.Atoi(a[1:])
		return n, args[1:], err
	}
	return def, args, nil
}

func headTool(ctx context.Context, tio toolIO, args []string) error {
	n, files, err := count(args, 10)
	if err != nil {
		return fmt.Errorf("bad line count: %v (use head [-n N] [FILE...])", err)
	}
	return tio.eachInput("head", files, func(name string, r io.Reader) error {
		if len(files) > 1 {
			fmt.Fprintf(tio.out, "==> %s <==\n", name)
		}
		s := newScanner(r)
		for i := 0; i < n && s.Scan(); i++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(tio.out, "%s\n", s.Bytes())
		}
		return s.Err()
	})
}

func tailTool(ctx context.Context, tio toolIO, args []string) error {
	n, files, err := count(args, 10)
	if err != nil {
		return fmt.Errorf("bad line count: %v (use tail [-n N] [FILE...])", err)
	}
	if n < 0 {
		n = -n
	}
	return tio.eachInput("tail", files, func(name string, r io.Reader) error {
		if len(files) > 1 {
			fmt.Fprintf(tio.out, "==> %s <==\n", name)
		}
		ring := make([][]byte, 0, n)
		s := newScanner(r)
		for s.Scan() {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if n == 0 {
				continue
			}
			if len(ring) == n {
				ring = append(ring[:0], ring[1:]...)
			}
			ring = append(ring, append([]byte(nil), s.Bytes()...))
		}
		for _, l := range ring {
			fmt.Fprintf(tio.out, "%s\n", l)
		}
		return s.Err()
	})
}

func wcTool(ctx context.Context, tio toolIO, args []string) error {
	var lines, words, chars bool
	var files []string
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' {
			for _, c := range a[1:] {
				switch c {
				case 'l':
					lines = true
				case 'w':
					words = true
				case 'c', 'm':
					chars = true
				default:
					return fmt.Errorf("unknown option -%c (use wc [-lwc] [FILE...])", c)
				}
			}
			continue
		}
		files = append(files, a)
	}
	if !lines && !words && !chars {
		lines, words, chars = true, true, true
	}
	var tl, tw, tc int64
	print := func(l, w, c int64, name string) {
		var f []string
		if lines {
			f = append(f, fmt.Sprintf("%7d", l))
		}
		if words {
			f = append(f, fmt.Sprintf("%7d", w))
		}
		if chars {
			f = append(f, fmt.Sprintf("%7d", c))
		}
		if name != "-" {
			f = append(f, name)
		}
		fmt.Fprintln(tio.out, strings.Join(f, " "))
	}
	err := tio.eachInput("wc", files, func(name string, r io.Reader) error {
		var l, w, c int64
		inWord := false
		buf := make([]byte, 32<<10)
		for {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			k, err := r.Read(buf)
			for _, b := range buf[:k] {
				c++
				if b == '\n' {
					l++
				}
				space := b == ' ' || b == '\n' || b == '\t' || b == '\r' || b == '\v' || b == '\f'
				if !space && !inWord {
					w++
				}
				inWord = !space
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
		}
		tl, tw, tc = tl+l, tw+w, tc+c
		print(l, w, c, name)
		return nil
	})
	if len(files) > 1 {
		print(tl, tw, tc, "total")
	}
	return err
}

func grepTool(ctx context.Context, tio toolIO, args []string) error {
	var ignore, invert, number, countOnly, list, quiet, fixed bool
	var pattern string
	havePattern := false
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			files = append(files, args[i+1:]...)
			break
		}
		if a == "-e" && i+1 < len(args) {
			pattern, havePattern = args[i+1], true
			i++
			continue
		}
		if len(a) > 1 && a[0] == '-' {
			for _, c := range a[1:] {
				switch c {
				case 'i':
					ignore = true
				case 'v':
					invert = true
				case 'n':
					number = true
				case 'c':
					countOnly = true
				case 'l':
					list = true
				case 'q':
					quiet = true
				case 'F':
					fixed = true
				case 'E', 'G':
				default:
					return interpErr(tio, "grep: unknown option -%c (use grep [-ivnclqFE] [-e] PATTERN [FILE...])", c)
				}
			}
			continue
		}
		if !havePattern {
			pattern, havePattern = a, true
			continue
		}
		files = append(files, a)
	}
	if !havePattern {
		return interpErr(tio, "grep: no pattern (use grep [-ivnclqFE] [-e] PATTERN [FILE...])")
	}
	if fixed {
		pattern = regexp.QuoteMeta(pattern)
	}
	if ignore {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return interpErr(tio, "grep: bad pattern: %v (Go's regexp syntax, like grep -E)", err)
	}
	matched := false
	err = tio.eachInput("grep", files, func(name string, r io.Reader) error {
		s := newScanner(r)
		var n, hits int
		for s.Scan() {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			n++
			if re.Match(s.Bytes()) == invert {
				continue
			}
			hits++
			matched = true
			if quiet {
				return nil
			}
			if list {
				fmt.Fprintln(tio.out, name)
				return nil
			}
			if countOnly {
				continue
			}
			var pre bytes.Buffer
			if len(files) > 1 {
				pre.WriteString(name + ":")
			}
			if number {
				fmt.Fprintf(&pre, "%d:", n)
			}
			fmt.Fprintf(tio.out, "%s%s\n", pre.Bytes(), s.Bytes())
		}
		if countOnly {
			if len(files) > 1 {
				fmt.Fprintf(tio.out, "%s:", name)
			}
			fmt.Fprintln(tio.out, hits)
		}
		return s.Err()
	})
	if err != nil {
		var st interp.ExitStatus
		if errors.As(err, &st) {
			return interp.ExitStatus(2)
		}
		return err
	}
	if !matched {
		return interp.ExitStatus(1)
	}
	return nil
}

// interpErr reports a usage error with grep's status 2.
func interpErr(tio toolIO, format string, a ...any) error {
	fmt.Fprintf(tio.err, format+"\n", a...)
	return interp.ExitStatus(2)
}

func envTool(_ context.Context, tio toolIO, args []string) error {
	if len(args) > 0 {
		return errors.New("running a command is not supported here; write NAME=VALUE command instead")
	}
	for _, kv := range tio.env() {
		fmt.Fprintln(tio.out, kv)
	}
	return nil
}

func sleepTool(ctx context.Context, _ toolIO, args []string) error {
	if len(args) != 1 {
		return errors.New("use sleep SECONDS")
	}
	s, err := strconv.ParseFloat(strings.TrimSuffix(args[0], "s"), 64)
	if err != nil || s < 0 {
		return fmt.Errorf("bad time %q", args[0])
	}
	t := time.NewTimer(time.Duration(s * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return interp.ExitStatus(130)
	}
}
