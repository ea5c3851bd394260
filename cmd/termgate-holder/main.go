// Command termgate-holder holds durable sessions inside an instance (see
// package holder). The gateway copies this static binary into the instance
// and runs it with execs:
//
//	termgate-holder serve --key-stdin --socket PATH --session ID [--idle D] [--buffer N] [--cols C --rows R] [--install-as PATH] [--env K=V]... -- SHELL [ARGS...]
//	    reads the holder's key from the front of stdin (a line of 64 hex
//	    digits, nothing more: see holder.KeyLine), starts a holder daemon
//	    (in its own session, detached from the exec) with that key, which
//	    it passes on a pipe (never in an argument or the environment: the
//	    instance's users can read the one, the shell inherits the other),
//	    and prints "holder PID SOCKET" once it listens, or prints
//	    "already held SOCKET" and starts nothing when a live holder holds
//	    the socket (a gateway then connects to that one); with --attach it
//	    then goes on as "attach SOCKET" (the gateway's start is one exec);
//	termgate-holder attach PATH
//	    connects the exec's stdin/stdout to the holder's socket: passes
//	    them to the holder and waits, or copies when the holder does not
//	    take them (see holder.Attach), until either side ends;
//	termgate-holder sftp | dial HOST:PORT
//	    the tools beside sessions (see tools.go);
//	termgate-holder rsync [--login LOGIN] [--read-only] -- --server ...
//	    rsync's remote side (see rsync.go);
//	termgate-holder login LOGIN | as LOGIN -- CMD [ARGS...]
//	    run as the instance's user LOGIN (see login.go);
//	termgate-holder version
//	    prints the protocol version and build.
//
// Nothing listens on a network port: only a process that can exec in the
// instance reaches the socket (a 0700 directory, a 0600 socket).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termgate/termgate/holder"
)

// build is set by the gateway's build (-ldflags -X main.build=...).
var build = "dev"

// proto, when set (-ldflags -X main.proto=N), makes this holder announce
// and accept protocol version N instead of holder.Version: tests build a
// holder of "another version" with it.
var proto = ""

// fdpass, set to "off" (-ldflags -X main.fdpass=off), makes this build's
// attach only copy and its holder ignore passed descriptors, as builds
// before descriptor passing did: tests meet "an older build" with it.
var fdpass = ""

// daemonEnv marks the re-executed daemon.
const daemonEnv = "TERMGATE_HOLDER_DAEMON"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "attach":
		args := os.Args[2:]
		if len(args) == 3 && args[0] == "--install-as" {
			err = install(args[1])
			args = args[2:]
		}
		if len(args) != 1 {
			usage()
		}
		if err == nil {
			err = attach(args[0], os.Stdin, os.Stdout)
		}
	case "login":
		var args []string
		if args, err = toolArgs(os.Args[2:]); err == nil {
			err = loginCheck(args)
		}
	case "as":
		var args []string
		if args, err = toolArgs(os.Args[2:]); err == nil {
			err = runAs(args)
		}
	case "sftp":
		var args []string
		if args, err = toolArgs(os.Args[2:]); err == nil && len(args) >= 2 && args[0] == "--login" {
			_, err = becomeLogin(args[1])
			args = args[2:]
		}
		if err == nil {
			dir := workDir()
			readOnly := len(args) > 0 && args[0] == "--read-only"
			if readOnly {
				args = args[1:]
			}
			switch {
			case len(args) == 2 && args[0] == "--cwd-of":
				dir = sessionDir(args[1], dir)
			case len(args) != 0:
				usage()
			}
			err = serveSFTP(os.Stdin, os.Stdout, dir, readOnly)
		}
	case "dial":
		var args []string
		if args, err = toolArgs(os.Args[2:]); err == nil {
			if len(args) != 1 {
				usage()
			}
			err = dial(args[0], os.Stdin, os.Stdout)
		}
	case "listen", "fetch":
		var args []string
		if args, err = toolArgs(os.Args[2:]); err == nil {
			if os.Args[1] == "listen" {
				err = listen(args, os.Stdin, os.Stdout)
			} else {
				err = fetch(args, os.Stdin, os.Stdout)
			}
		}
	case "rsync":
		var args []string
		if args, err = toolArgs(os.Args[2:]); err == nil {
			err = rsyncCmd(args, os.Stdin, os.Stdout)
		}
	case "agent":
		var args []string
		if args, err = toolArgs(os.Args[2:]); err == nil {
			err = agentCmd(args, os.Stdin, os.Stdout)
		}
	case "kill":
		var args []string
		if args, err = toolArgs(os.Args[2:]); err == nil {
			err = killCmd(args)
		}
	case "version":
		fmt.Printf("termgate-holder protocol %d build %s\n", protoVersion(), build)
	default:
		usage()
	}
	if err != nil {
		dropUpload()
		fmt.Fprintln(os.Stderr, "termgate-holder:", err)
		if u := (*holder.Untrusted)(nil); errors.As(err, &u) {
			os.Exit(holder.ExitUntrusted) // the gateway tries elsewhere
		}
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: termgate-holder serve --key-stdin --socket PATH --session ID [flags] -- SHELL [ARGS...] | attach [--install-as PATH] SOCKET | sftp [--install-as PATH] [--login LOGIN] [--read-only] [--cwd-of SESSION] | login [--install-as PATH] LOGIN | as [--install-as PATH] LOGIN -- CMD [ARGS...] | dial [--install-as PATH] HOST:PORT|unix:PATH | listen [--install-as PATH] tcp HOST:PORT|unix PATH | fetch [--install-as PATH] SOCKET TOKEN | agent [--install-as PATH] [--login LOGIN] SOCKET | rsync [--install-as PATH] [--login LOGIN] [--read-only] -- --server ARGS... | kill [--install-as PATH] MARKER|--prefix=P|--all... | version")
	os.Exit(2)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	sock := fs.String("socket", "", "unix socket path (its directory is created 0700)")
	session := fs.String("session", "", "session ID")
	idle := fs.Duration("idle", 30*time.Minute, "end the session after this long with no client on any gateway")
	buffer := fs.Int("buffer", 64<<10, "replay buffer in bytes")
	cols := fs.Int("cols", 80, "initial columns")
	rows := fs.Int("rows", 24, "initial rows")
	attachToo := fs.Bool("attach", false, "after the status line, bridge stdin/stdout to the socket as attach does (one exec instead of two)")
	installAs := fs.String("install-as", "", "first rename this binary to PATH (atomically: an upload under a temporary name never leaves a half-written PATH for a racing gateway to run)")
	keyStdin := fs.Bool("key-stdin", false, "first read the holder's key from stdin: 64 hex digits and a newline (required)")
	login := fs.String("login", "", "run the shell as the instance's user LOGIN (see login.go)")
	var env multiFlag
	fs.Var(&env, "env", "KEY=VALUE for the shell (repeatable)")
	agentSock := fs.Bool("agent-socket", false, "set each shell's SSH_AUTH_SOCK to its session's agent socket (ssh -A)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	shell := fs.Args()
	if *sock == "" || *session == "" || len(shell) == 0 {
		return errors.New("serve needs --socket, --session and a shell command after --")
	}
	if !*keyStdin {
		// A holder without a key would serve any gateway (and its
		// proofs would mean nothing): see holder/proof.go.
		return errors.New("serve needs --key-stdin: the gateway writes the holder's key first on its stdin")
	}
	// Only a directory and a binary of this user's (holder.CheckHome).
	if err := holder.MakeHome(filepath.Dir(*sock)); err != nil {
		return err
	}
	if *installAs == "" {
		if err := holder.CheckSelf(); err != nil {
			return err
		}
	}
	if os.Getenv(daemonEnv) != "1" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		if *login != "" {
			// Refused before anything starts: the shell's "as" would
			// fail inside a session that then ends at once.
			u, err := lookupLogin(*login)
			if err == nil {
				err = mayBecome(u, *login)
			}
			if err != nil {
				return err
			}
		}
		// Exactly the key line: what follows is the attach's stream.
		key, err := holder.ReadKeyLine(os.Stdin)
		if err != nil {
			return fmt.Errorf("--key-stdin: %w", err)
		}
		if *installAs != "" {
			if err := install(*installAs); err != nil {
				return err
			}
			self = *installAs
		}
		if err := startDaemon(self, *sock, key); err != nil || !*attachToo {
			return err
		}
		return attach(*sock, os.Stdin, os.Stdout)
	}
	os.Unsetenv(daemonEnv)
	if *login != "" {
		// The daemon stays the exec's user (its socket and directory
		// are that user's: CONTRACT "Durable sessions" 6); the shell
		// becomes the login through this same checked binary.
		self, err := os.Executable()
		if err != nil {
			return err
		}
		shell = append([]string{self, "as", *login, "--"}, shell...)
	}
	// One P: the daemon only moves bytes between a terminal and its
	// gateways' pipes, a goroutine handing each chunk to the next. With
	// more Ps every handoff wakes another thread, which spins (futex,
	// nanosleep, sched_yield) to steal it: more CPU than the copying
	// itself, and a thread wakeup on every keystroke's echo.
	runtime.GOMAXPROCS(1)
	// fd 3 is the pipe startDaemon waits on: the shell must not inherit
	// it, or startDaemon would wait for the shell's end.
	syscall.CloseOnExec(3)
	ready := os.NewFile(3, "ready")
	// fd 4 carries the key (startDaemon): read, then closed, so neither
	// the shell nor anything it starts ever has it.
	syscall.CloseOnExec(4)
	keyPipe := os.NewFile(4, "key")
	key, err := holder.ReadKeyLine(keyPipe)
	keyPipe.Close()
	if err != nil {
		fmt.Fprintln(ready, "error: the key from the serve process:", err)
		ready.Close()
		return err
	}
	logf, err := os.OpenFile(*sock+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	logger := slog.New(slog.NewJSONHandler(logf, nil))
	// The session's jobs that double-fork stay below the holder, where
	// its kill (and not the gateway's sweep) ends them: see holder.Subreap.
	if stopReaper, err := holder.Subreap(); err != nil {
		logger.Warn("jobs that double-fork escape the holder's kill", "err", err)
	} else {
		defer stopReaper()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	err = holder.Serve(ctx, holder.ServeConfig{
		Socket: *sock, Session: *session, Shell: shell, Env: env, Login: *login, AgentSocket: *agentSock,
		Cols: *cols, Rows: *rows, BufferSize: *buffer, IdleTimeout: *idle, Build: build,
		Logger: logger, Proto: protoVersion(), NoPassing: !passing(), Key: key,
		Ready: func() {
			fmt.Fprintln(ready, "ready")
			ready.Close()
		},
	})
	switch {
	case errors.Is(err, holder.ErrAlreadyHeld):
		fmt.Fprintln(ready, "held")
		ready.Close()
		return nil
	case errors.Is(err, context.Canceled):
		err = nil
	case err != nil:
		fmt.Fprintln(ready, "error:", err)
		ready.Close()
	}
	return err
}

// install renames this binary (uploaded under a temporary name) to path:
// atomic, so a racing gateway runs either the old complete file or this
// one, never a half-written one.
//
// The upload is in a fresh directory of its own (the gateway's launch
// script checked that it and this binary are this user's); the
// directory installed into must be this user's alone (holder.MakeHome), or
// nothing is installed. The emptied upload directory is removed.
func install(path string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := holder.CheckSelf(); err != nil {
		return err
	}
	if err := holder.MakeHome(filepath.Dir(path)); err != nil {
		return err
	}
	if err := os.Rename(self, path); err != nil {
		return fmt.Errorf("install as %s: %w", path, err)
	}
	if d := filepath.Dir(self); strings.HasPrefix(filepath.Base(d), uploadPrefix) {
		_ = os.Remove(d)
	}
	return nil
}

func protoVersion() int {
	if n, err := strconv.Atoi(proto); err == nil {
		return n
	}
	return holder.Version
}

// startDaemon re-executes this program as the daemon in a session of its
// own (so it outlives the exec that started it and the gateway behind it),
// hands it key on a pipe (its fd 4), and returns once the daemon says on
// another (its fd 3) that it listens, that another holder holds the socket,
// or why it failed.
func startDaemon(self, sock string, key []byte) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	kr, kw, err := os.Pipe()
	if err != nil {
		w.Close()
		return err
	}
	// 65 bytes fit any pipe's buffer: written now, read by the daemon.
	_, err = kw.Write(holder.KeyLine(key))
	kw.Close()
	if err != nil {
		kr.Close()
		w.Close()
		return fmt.Errorf("hand the key to the holder daemon: %w", err)
	}
	// The daemon runs the installed copy and attaches nothing: drop those
	// flags (before "--": what follows is the shell's).
	args := slices.Clone(os.Args[1:])
	flags := len(args)
	if i := slices.Index(args, "--"); i >= 0 {
		flags = i
	}
	if i := slices.Index(args[:flags], "--install-as"); i >= 0 && i+1 < flags {
		args = slices.Delete(args, i, i+2)
		flags -= 2
	}
	if i := slices.Index(args[:flags], "--attach"); i >= 0 {
		args = slices.Delete(args, i, i+1)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), daemonEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{w, kr}
	err = cmd.Start()
	w.Close()
	kr.Close()
	if err != nil {
		return fmt.Errorf("start the holder daemon: %w", err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	done := make(chan string, 1)
	go func() { // ends when the daemon writes or exits (EOF)
		b, _ := io.ReadAll(io.LimitReader(r, 4096))
		done <- strings.TrimSpace(string(b))
	}()
	var said string
	select {
	case said = <-done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the holder daemon (pid %d) did not start listening on %s within 10s; see %s.log", pid, sock, sock)
	}
	switch {
	case said == "ready":
		fmt.Printf("holder %d %s\n", pid, sock)
		return nil
	case said == "held":
		fmt.Printf("already held %s\n", sock)
		return nil
	case said == "":
		return fmt.Errorf("the holder daemon (pid %d) exited before listening on %s; see %s.log", pid, sock, sock)
	}
	return fmt.Errorf("the holder daemon: %s", strings.TrimPrefix(said, "error: "))
}

// attach connects the exec's stdin and stdout to the holder's socket (see
// holder.Attach). It ends when the gateway goes away or the holder closes
// the connection.
func attach(sock string, in, out *os.File) error {
	if err := holder.CheckSelf(); err != nil {
		return err
	}
	return holder.Attach(sock, in, out, passing())
}

// passing says whether this build passes descriptors between its attach
// process and its holder (see holder.Attach).
func passing() bool { return fdpass != "off" }

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
