// Command termgate-toolbox is the shell termgate brings into an instance
// that has none (a distroless or FROM scratch image): a POSIX shell
// interpreter (mvdan.cc/sh) whose common utilities (ls, cat, ps, grep...)
// run in its own process, so that it needs nothing from the image. The
// gateway copies it into a private directory of the instance and execs
// it there, so it sees the instance's filesystem, processes and network.
// See docs/TOOLBOX.md.
//
// Usage:
//
//	termgate-toolbox [--unlink] [--ready] [-c LINE]
//
// --unlink removes the toolbox's own copy (and the private upload
// directory holding it) once it runs, so that nothing of it is left in the
// instance once it ends; --ready prints Ready and exits (the gateway's
// check that the copy runs there: not noexec); -c runs LINE, as sh -c.
// Without -c it reads commands from stdin, with a prompt when stdin is a
// terminal.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/term"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Ready is what --ready prints.
const Ready = "termgate-toolbox ready"

// uploadPrefix is the name the gateway's private upload directories
// start with (exechost's uploadPrefix): --unlink removes only such a one.
const uploadPrefix = ".termgate-upload-"

// defaultPath is PATH where the image sets none (FROM scratch).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var line string
	var hasLine, unlink bool
	for len(args) > 0 {
		switch args[0] {
		case "--unlink":
			unlink = true
		case "--ready":
			fmt.Fprintln(stdout, Ready)
			return 0
		case "-c":
			if len(args) < 2 {
				fmt.Fprintln(stderr, "termgate-toolbox: -c needs a command line")
				return 2
			}
			line, hasLine = args[1], true
			args = args[1:]
		default:
			fmt.Fprintf(stderr, "termgate-toolbox: unknown argument %q (use [--unlink] [--ready] [-c LINE])\n", args[0])
			return 2
		}
		args = args[1:]
	}
	if unlink {
		if err := removeSelf(os.Args[0]); err != nil {
			fmt.Fprintln(stderr, "termgate-toolbox: removing its copy:", err)
		}
	}
	env := os.Environ()
	if os.Getenv("PATH") == "" {
		env = append(env, "PATH="+defaultPath)
	}
	r, err := interp.New(
		interp.Interactive(!hasLine),
		interp.StdIO(stdin, stdout, stderr),
		interp.Env(expand.ListEnviron(env...)),
		interp.ExecHandlers(utilities),
		interp.CallHandler(unsupportedBuiltins),
	)
	if err != nil {
		fmt.Fprintln(stderr, "termgate-toolbox:", err)
		return 1
	}
	if hasLine {
		err = runScript(r, strings.NewReader(line))
	} else if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		err = interactive(r, stdin, stdout, stderr)
	} else {
		err = runScript(r, stdin)
	}
	var status interp.ExitStatus
	switch {
	case errors.As(err, &status):
		return int(status)
	case err != nil:
		fmt.Fprintln(stderr, "termgate-toolbox:", err)
		return 1
	}
	return 0
}

// removeSelf removes the toolbox's copy at exe and the upload directory
// holding it: only one the gateway made (its name), never anything else.
// A running program's file can go: the kernel keeps it while it runs.
func removeSelf(exe string) error {
	dir := filepath.Dir(exe)
	if !filepath.IsAbs(exe) || !strings.HasPrefix(filepath.Base(dir), uploadPrefix) {
		return fmt.Errorf("%s is not in an upload directory of the gateway's; left as it is", exe)
	}
	if err := os.Remove(exe); err != nil {
		return err
	}
	return os.Remove(dir)
}

func runScript(r *interp.Runner, in io.Reader) error {
	prog, err := syntax.NewParser().Parse(in, "")
	if err != nil {
		return err
	}
	return r.Run(context.Background(), prog)
}

// interactive reads commands from a terminal with a prompt; the kernel's
// line discipline gives the editing (erase, kill line, ^C, ^D). ^C ends
// the command running, not the shell.
func interactive(r *interp.Runner, stdin io.Reader, stdout, stderr io.Writer) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	parser := syntax.NewParser()
	fmt.Fprintf(stdout, "termgate toolbox: a shell and tools the gateway brought (this image has no shell). Type help.\n")
	prompt(r, stdout)
	for stmts, err := range parser.InteractiveSeq(stdin) {
		if err != nil {
			fmt.Fprintln(stderr, "termgate-toolbox:", err)
			return nil // the parser cannot go on after an error
		}
		if parser.Incomplete() {
			fmt.Fprint(stdout, "> ")
			continue
		}
		for _, stmt := range stmts {
			err := runOne(r, stmt, sigs)
			if r.Exited() {
				return err
			}
			if err != nil && !isStatus(err) {
				fmt.Fprintln(stderr, "termgate-toolbox:", err)
			}
		}
		prompt(r, stdout)
	}
	return nil
}

// interrupted is the running statement's ^C: cancelled by a ^C (or ^\)
// while it runs. The toolbox's own utilities stop on it (utilities);
// the instance's programs get the terminal's SIGINT themselves. The
// statement's own context is never cancelled: the interpreter takes a
// cancelled one for the end of the whole shell.
var interrupted atomic.Pointer[context.Context]

// runOne runs stmt with its ^C watched. The ^C context is not cancelled
// once it returns: a utility it started in the background (cmd &) runs
// under it.
func runOne(r *interp.Runner, stmt *syntax.Stmt, sigs <-chan os.Signal) error {
	drain(sigs) // a ^C typed at the prompt is for nothing that runs now
	ictx, cancel := context.WithCancel(context.Background())
	interrupted.Store(&ictx)
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-sigs:
			cancel()
		case <-done:
		}
	}()
	err := r.Run(context.Background(), stmt)
	close(done)
	<-watched
	return err
}

func drain(c <-chan os.Signal) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func isStatus(err error) bool {
	var s interp.ExitStatus
	return errors.As(err, &s)
}

func prompt(r *interp.Runner, w io.Writer) {
	sign := "$"
	if os.Geteuid() == 0 {
		sign = "#"
	}
	fmt.Fprintf(w, "toolbox:%s%s ", r.Dir, sign)
}
