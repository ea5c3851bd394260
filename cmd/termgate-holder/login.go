package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/internal/names"
	"github.com/termgate/termgate/internal/passwd"
)

// Logins (CONTRACT.md "Named sessions and logins"): the gateway runs a
// session's shell, a command or a file transfer as the instance's user
// LOGIN through this binary, the same way on every backend (Kubernetes'
// exec has no user field):
//
//	termgate-holder login [--install-as PATH] LOGIN
//	    checks that this process can become LOGIN (found in the
//	    instance's /etc/passwd, or a numeric uid) by becoming it, then
//	    prints holder.ToolReady and exits: the gateway's check before it
//	    starts anything, so that a missing login starts nothing;
//	termgate-holder as [--install-as PATH] LOGIN -- CMD [ARGS...]
//	    becomes LOGIN and executes CMD (found on PATH) in its place, in
//	    LOGIN's home directory with HOME, USER, LOGNAME and SHELL set;
//	sftp --login LOGIN, serve --login LOGIN
//	    the same for the SFTP server, and for a held session's shell.
//
// Becoming is setgroups, setgid, setuid, which needs root (or the
// capabilities): a process that runs as another user can only be itself,
// and says so.

// lookupLogin finds login in the instance's /etc/passwd and /etc/group. An
// instance without /etc/passwd still has numeric uids.
func lookupLogin(login string) (passwd.User, error) {
	if !names.ValidLogin(login) {
		return passwd.User{}, fmt.Errorf("login %q is not a user name or a uid", login)
	}
	pw, err := openEtc("/etc/passwd")
	if err != nil {
		return passwd.User{}, err
	}
	defer pw.Close()
	gr, err := openEtc("/etc/group")
	if err != nil {
		return passwd.User{}, err
	}
	defer gr.Close()
	u, err := passwd.Lookup(login, pw, gr)
	if errors.Is(err, passwd.ErrNoSuchUser) {
		return u, fmt.Errorf("login refused: there is no user %q in this instance (its /etc/passwd does not list it); use one of its users, or a numeric uid", login)
	}
	return u, err
}

// openEtc opens a file of /etc that may be missing (an empty reader then).
// Only regular files are read: a FIFO or a device planted there would
// block or never end.
func openEtc(path string) (io.ReadCloser, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return io.NopCloser(strings.NewReader("")), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("read %s: not a regular file", path)
	}
	return f, nil
}

// mayBecome says why this process cannot become u, nil when it can try.
func mayBecome(u passwd.User, login string) error {
	euid := os.Geteuid()
	if euid == 0 || uint32(euid) == u.UID {
		return nil
	}
	return fmt.Errorf("login refused: this instance runs as uid %d, not root, so it cannot become %q (uid %d): a non-root container can only be its own user; connect without LOGIN@", euid, login, u.UID)
}

// become makes this process (every thread of it) u: supplementary
// groups, group, then user, since once the uid is not 0 none can change.
func become(u passwd.User, login string) error {
	if err := mayBecome(u, login); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil // it is u already
	}
	groups := make([]int, 0, len(u.Groups)+1)
	groups = append(groups, int(u.GID))
	for _, g := range u.Groups {
		groups = append(groups, int(g))
	}
	for _, step := range []struct {
		what string
		do   func() error
	}{
		{"setgroups", func() error { return syscall.Setgroups(groups) }},
		{"setgid", func() error { return syscall.Setgid(int(u.GID)) }},
		{"setuid", func() error { return syscall.Setuid(int(u.UID)) }},
	} {
		if err := step.do(); err != nil {
			return fmt.Errorf("login refused: cannot become %q (uid %d): %s: %v (the container lacks the SETUID and SETGID capabilities?)", login, u.UID, step.what, err)
		}
	}
	return nil
}

// loginEnv is env with u's HOME, USER, LOGNAME and SHELL.
func loginEnv(env []string, u passwd.User) []string {
	set := map[string]string{"HOME": u.Home}
	if u.Name != "" {
		set["USER"], set["LOGNAME"] = u.Name, u.Name
	} else {
		set["USER"], set["LOGNAME"] = strconv.FormatUint(uint64(u.UID), 10), strconv.FormatUint(uint64(u.UID), 10)
	}
	if u.Shell != "" {
		set["SHELL"] = u.Shell
	}
	out := make([]string, 0, len(env)+len(set))
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if _, ok := set[k]; !ok {
			out = append(out, e)
		}
	}
	for _, k := range []string{"HOME", "USER", "LOGNAME", "SHELL"} {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// becomeLogin finds login, becomes it and moves to its home (else /),
// with HOME and the rest in this process's environment.
func becomeLogin(login string) (passwd.User, error) {
	u, err := lookupLogin(login)
	if err != nil {
		return u, err
	}
	if err := become(u, login); err != nil {
		return u, err
	}
	if os.Chdir(u.Home) != nil {
		_ = os.Chdir("/")
	}
	for _, e := range loginEnv(nil, u) {
		k, v, _ := strings.Cut(e, "=")
		_ = os.Setenv(k, v)
	}
	return u, nil
}

// loginCheck is "login LOGIN".
func loginCheck(args []string) error {
	if len(args) != 1 {
		usage()
	}
	if _, err := becomeLogin(args[0]); err != nil {
		return err
	}
	_, err := io.WriteString(os.Stdout, holder.ToolReady+"\n")
	return err
}

// runAs is "as LOGIN -- CMD [ARGS...]": it never returns when it works.
//
// Run as root, it stays as CMD's parent rather than executing it in its
// place: the gateway ends a session's processes by the marker in their
// environment (procmark.KillScript), and a root without CAP_SYS_PTRACE
// (Docker's default) cannot read another user's /proc/PID/environ. This
// root parent keeps the marker readable; the script kills it, and CMD with
// everything it started as the members of its session and its
// descendants, whose /proc/PID/stat anyone may read (the script takes no
// "as" process for a holder, whatever its binary). As LOGIN already (a
// non-root instance's own user), or as a held shell (TERMGATE_HELD=1:
// its holder above ends it, holder.shell.kill), it executes CMD in its
// place.
func runAs(args []string) error {
	if len(args) < 3 || args[1] != "--" {
		usage()
	}
	login, argv := args[0], args[2:]
	if os.Geteuid() == 0 && os.Getenv("TERMGATE_HELD") != "1" {
		u, err := lookupLogin(login)
		if err != nil {
			return err
		}
		return superviseAs(u, login, argv)
	}
	if _, err := becomeLogin(login); err != nil {
		return err
	}
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("run %s as %s: %w", argv[0], login, err)
	}
	return fmt.Errorf("run %s as %s: %w", bin, login, syscall.Exec(bin, argv, os.Environ()))
}

// prSetDumpable is prctl's PR_SET_DUMPABLE (linux/prctl.h).
const prSetDumpable = 4

// superviseAs starts argv as u from u's home (else /), with its
// terminal and standard streams, and exits with its status. Signals the
// terminal sends its process group (^C, ^\, ^Z) are CMD's, not this
// parent's; a hangup or SIGTERM is passed on to CMD.
func superviseAs(u passwd.User, login string, argv []string) error {
	if os.Chdir(u.Home) != nil {
		_ = os.Chdir("/")
	}
	env := loginEnv(os.Environ(), u) // the marker stays
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("run %s as %s: %w", argv[0], login, err)
	}
	groups := append([]uint32{u.GID}, u.Groups...)
	cmd := &exec.Cmd{Path: bin, Args: argv, Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: groups}}}
	// Notified, not ignored: an ignored signal would stay ignored in CMD.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
		syscall.SIGHUP, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("login refused: cannot run %s as %q (uid %d): %v", bin, login, u.UID, err)
	}
	// Go forks with CLONE_VM, so the child's setuid made this process's
	// memory non-dumpable too, which hides its environment (the marker)
	// from the kill script as well: make it dumpable again. It holds no
	// secret, and LOGIN may not read a root process's memory either way.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 1, 0); errno != 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("run %s as %s: prctl(PR_SET_DUMPABLE): %v", bin, login, errno)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				if sig == syscall.SIGHUP || sig == syscall.SIGTERM {
					_ = cmd.Process.Signal(sig)
				}
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return fmt.Errorf("run %s as %s: %w", bin, login, err)
	}
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	os.Exit(code)
	return nil
}
