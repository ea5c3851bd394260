// Command termgate-holder holds durable sessions inside an instance (see
// package holder). The gateway copies this static binary into the instance
// and runs it with execs:
//
//	termgate-holder serve --socket PATH --session ID [--idle D] [--buffer N] [--cols C --rows R] -- SHELL [ARGS...]
//	    starts a holder daemon (in its own session, detached from the
//	    exec) and returns once its socket answers;
//	termgate-holder attach PATH
//	    bridges the exec's stdin/stdout to the holder's socket, until
//	    either side ends;
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
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/termgate/termgate/holder"
)

// build is set by the gateway's build (-ldflags -X main.build=...).
var build = "dev"

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
		if len(os.Args) != 3 {
			usage()
		}
		err = attach(os.Args[2], os.Stdin, os.Stdout)
	case "version":
		fmt.Printf("termgate-holder protocol %d build %s\n", holder.Version, build)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "termgate-holder:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: termgate-holder serve --socket PATH --session ID [flags] -- SHELL [ARGS...] | attach PATH | version")
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
	var env multiFlag
	fs.Var(&env, "env", "KEY=VALUE for the shell (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	shell := fs.Args()
	if *sock == "" || *session == "" || len(shell) == 0 {
		return errors.New("serve needs --socket, --session and a shell command after --")
	}
	if err := os.MkdirAll(filepath.Dir(*sock), 0o700); err != nil {
		return err
	}
	_ = os.Chmod(filepath.Dir(*sock), 0o700)
	if os.Getenv(daemonEnv) != "1" {
		return startDaemon(*sock)
	}
	os.Unsetenv(daemonEnv)
	logf, err := os.OpenFile(*sock+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	err = holder.Serve(ctx, holder.ServeConfig{
		Socket: *sock, Session: *session, Shell: shell, Env: env,
		Cols: *cols, Rows: *rows, BufferSize: *buffer, IdleTimeout: *idle, Build: build,
		Logger: slog.New(slog.NewJSONHandler(logf, nil)),
	})
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// startDaemon re-executes this program as the daemon in a session of its
// own (so it outlives the exec that started it and the gateway behind it),
// and returns once its socket answers.
func startDaemon(sock string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), daemonEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the holder daemon: %w", err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			fmt.Printf("holder %d %s\n", pid, sock)
			return nil
		}
	}
	return fmt.Errorf("the holder daemon (pid %d) did not answer on %s; see %s.log", pid, sock, sock)
}

// attach copies in to the socket and the socket to out. It ends when in
// ends (the gateway went away) or the holder closes the connection.
func attach(sock string, in io.Reader, out io.Writer) error {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return fmt.Errorf("no holder answers on %s: %w", sock, err)
	}
	defer c.Close()
	done := make(chan error, 2)
	go func() {
		_, err := io.Copy(c, in)
		done <- err
	}()
	go func() {
		_, err := io.Copy(out, c)
		done <- err
	}()
	return <-done // the other copy ends with the process
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
