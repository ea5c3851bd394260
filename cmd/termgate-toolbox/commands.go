package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/u-root/u-root/pkg/core"
	"github.com/u-root/u-root/pkg/core/cat"
	"github.com/u-root/u-root/pkg/core/chmod"
	"github.com/u-root/u-root/pkg/core/cp"
	"github.com/u-root/u-root/pkg/core/find"
	"github.com/u-root/u-root/pkg/core/ls"
	"github.com/u-root/u-root/pkg/core/mkdir"
	"github.com/u-root/u-root/pkg/core/mv"
	"github.com/u-root/u-root/pkg/core/rm"
	"github.com/u-root/u-root/pkg/core/touch"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
)

// The utilities run inside the toolbox's process: an image with no shell
// has no ls either. u-root's core commands (made to be run from a Go
// shell) where it has one; the rest (tools.go) are small ones of ours.

// uroot are u-root's core commands, by name.
var uroot = map[string]func() core.Command{
	"cat": cat.New, "chmod": chmod.New, "cp": cp.New, "find": find.New,
	"ls": ls.New, "mkdir": mkdir.New, "mv": mv.New, "rm": rm.New, "touch": touch.New,
}

// tool is one of our utilities: args without the name; out and errw are
// the command's stdout and stderr.
type tool func(ctx context.Context, io toolIO, args []string) error

type toolIO struct {
	in       io.Reader
	out, err io.Writer
	dir      string          // the shell's working directory
	env      func() []string // the exported environment, NAME=VALUE
	lookup   core.LookupEnvFunc
}

var tools map[string]tool

func init() {
	// Set here: help lists the table it is in.
	tools = map[string]tool{
		"env": envTool, "grep": grepTool, "head": headTool, "help": helpTool,
		"kill": killTool, "ps": psTool, "sleep": sleepTool, "tail": tailTool, "wc": wcTool,
		"netstat": netstatTool, "ss": netstatTool, "hexdump": hexdumpTool, "xxd": hexdumpTool,
		"df": dfTool, "du": duTool, "wget": wgetTool, "curl": curlTool,
	}
}

// utilities is the shell's exec handler: a utility of the toolbox when it
// has one by that name (or path /bin/NAME, as scripts write), else a
// program of the instance's, run from PATH as a shell would.
func utilities(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		name := args[0]
		if i := strings.LastIndexByte(name, '/'); i >= 0 && (strings.HasPrefix(name, "/bin/") || strings.HasPrefix(name, "/usr/bin/")) {
			if _, ok := lookupUtility(name[i+1:]); ok {
				name = name[i+1:]
			}
		}
		run, ok := lookupUtility(name)
		if !ok {
			return next(ctx, args)
		}
		hc := interp.HandlerCtx(ctx)
		tio := toolIO{
			in: hc.Stdin, out: hc.Stdout, err: hc.Stderr, dir: hc.Dir,
			lookup: func(k string) (string, bool) {
				v := hc.Env.Get(k)
				return v.String(), v.IsSet() && v.Exported
			},
			env: func() []string { return exported(hc) },
		}
		if hc.Stdin == nil {
			tio.in = strings.NewReader("")
		}
		var intr context.Context
		if p := interrupted.Load(); p != nil {
			intr = *p
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(intr, cancel)()
		}
		if err := run(ctx, tio, args[1:]); err != nil {
			if intr != nil && intr.Err() != nil {
				return interp.ExitStatus(130) // ^C, as a shell reports it
			}
			var status interp.ExitStatus
			if errors.As(err, &status) {
				return err
			}
			fmt.Fprintf(hc.Stderr, "%s: %v\n", name, err)
			return interp.ExitStatus(1)
		}
		return nil
	}
}

// unsupportedBuiltins sends the builtins the interpreter names but does
// not implement (kill) to the toolbox's utility of that name: /bin/NAME,
// which utilities maps back to it.
func unsupportedBuiltins(_ context.Context, args []string) ([]string, error) {
	if args[0] == "kill" {
		args[0] = "/bin/kill"
	}
	return args, nil
}

func lookupUtility(name string) (tool, bool) {
	if t, ok := tools[name]; ok {
		return t, true
	}
	if mk, ok := uroot[name]; ok {
		return func(ctx context.Context, tio toolIO, args []string) error {
			c := mk()
			c.SetIO(tio.in, tio.out, tio.err)
			c.SetWorkingDir(tio.dir)
			c.SetLookupEnv(tio.lookup)
			return c.RunContext(ctx, args...)
		}, true
	}
	return nil, false
}

func exported(hc interp.HandlerContext) []string {
	seen := map[string]string{}
	hc.Env.Each(func(name string, vr expand.Variable) bool {
		if vr.Exported && vr.IsSet() {
			seen[name] = vr.String()
		} else {
			delete(seen, name)
		}
		return true
	})
	out := make([]string, 0, len(seen))
	for k, v := range seen {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func helpTool(_ context.Context, tio toolIO, _ []string) error {
	names := make([]string, 0, len(tools)+len(uroot))
	for n := range tools {
		names = append(names, n)
	}
	for n := range uroot {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(tio.out, "termgate toolbox: a POSIX shell (mvdan.cc/sh) with these utilities built in:\n  %s\n", strings.Join(names, " "))
	fmt.Fprintf(tio.out, "and the shell's own builtins (echo, printf, cd, pwd, test, read, export, ...).\nOther commands run the instance's programs from PATH. exit ends the shell.\n")
	return nil
}
