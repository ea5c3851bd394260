package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/interp"
)

// procRoot is where ps reads processes (a test points it elsewhere).
var procRoot = "/proc"

// proc is one process as ps shows it.
type proc struct {
	pid, ppid int
	state     string
	uid       string
	cmd       string
}

// readProc reads /proc/PID: its stat (state, parent; the command name
// between the first '(' and the last ')', since a name may hold either),
// its owner, and its command line (the name in brackets when it has
// none: a kernel thread or a zombie).
func readProc(pid int) (proc, error) {
	dir := procRoot + "/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return proc{}, err
	}
	open, close := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || close < open {
		return proc{}, fmt.Errorf("%s/stat: unexpected format", dir)
	}
	p := proc{pid: pid}
	name := string(stat[open+1 : close])
	rest := strings.Fields(string(stat[close+1:]))
	if len(rest) < 2 {
		return proc{}, fmt.Errorf("%s/stat: unexpected format", dir)
	}
	p.state = rest[0]
	p.ppid, _ = strconv.Atoi(rest[1])
	if st, err := os.Stat(dir); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			p.uid = strconv.Itoa(int(sys.Uid))
		}
	}
	cmdline, _ := os.ReadFile(dir + "/cmdline")
	cmdline = bytes.TrimRight(cmdline, "\x00")
	if len(cmdline) == 0 {
		p.cmd = "[" + name + "]"
	} else {
		p.cmd = string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	return p, nil
}

func listProcs() ([]proc, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("%v (is /proc mounted in this instance?)", err)
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, err := readProc(pid)
		if err != nil {
			continue // it ended meanwhile
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out, nil
}

// userName is uid's name from the instance's /etc/passwd, else the uid.
func userName(uid string, cache map[string]string) string {
	if n, ok := cache[uid]; ok {
		return n
	}
	n := uid
	if u, err := user.LookupId(uid); err == nil {
		n = u.Username
	}
	cache[uid] = n
	return n
}

// psTool lists every process (ps -ef and ps aux alike: its options are
// accepted and ignored), the command line cut to the terminal's width.
func psTool(_ context.Context, tio toolIO, _ []string) error {
	procs, err := listProcs()
	if err != nil {
		return err
	}
	width := 0
	if c, ok := tio.lookup("COLUMNS"); ok {
		width, _ = strconv.Atoi(c)
	}
	if f, ok := tio.out.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			width = int(ws.Col)
		}
	}
	names := map[string]string{}
	fmt.Fprintf(tio.out, "%7s %7s %-8s %-4s %s\n", "PID", "PPID", "USER", "STAT", "COMMAND")
	for _, p := range procs {
		line := fmt.Sprintf("%7d %7d %-8s %-4s %s", p.pid, p.ppid, userName(p.uid, names), p.state, p.cmd)
		if width > 0 && len(line) > width {
			line = line[:width]
		}
		fmt.Fprintln(tio.out, line)
	}
	return nil
}

var signals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "TERM": syscall.SIGTERM, "STOP": syscall.SIGSTOP,
	"CONT": syscall.SIGCONT, "ALRM": syscall.SIGALRM, "CHLD": syscall.SIGCHLD, "PIPE": syscall.SIGPIPE,
}

func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	if sig, ok := signals[strings.TrimPrefix(strings.ToUpper(s), "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q (kill -l lists them)", s)
}

// killTool: kill [-s SIG | -SIG] PID... and kill -l.
func killTool(_ context.Context, tio toolIO, args []string) error {
	sig := syscall.SIGTERM
	if len(args) > 0 && args[0] == "-l" {
		names := make([]string, 0, len(signals))
		for n := range signals {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintln(tio.out, strings.Join(names, " "))
		return nil
	}
	if len(args) > 1 && args[0] == "-s" {
		s, err := parseSignal(args[1])
		if err != nil {
			return err
		}
		sig, args = s, args[2:]
	} else if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && args[0] != "--" {
		s, err := parseSignal(args[0][1:])
		if err != nil {
			return err
		}
		sig, args = s, args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return errors.New("use kill [-s SIGNAL | -SIGNAL] PID")
	}
	failed := false
	for _, a := range args {
		pid, err := strconv.Atoi(a)
		if err == nil {
			err = syscall.Kill(pid, sig)
		}
		if err != nil {
			fmt.Fprintf(tio.err, "kill: %s: %v\n", a, err)
			failed = true
		}
	}
	if failed {
		return interp.ExitStatus(1)
	}
	return nil
}
