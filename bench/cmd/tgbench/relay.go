package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/client"
)

// pathRelay is the relay floor: the direct exec, but through a process that
// does nothing but copy bytes between the client and the engine's socket
// (io.Copy both ways). Any gateway is such a process plus its own work, so
// this is the least a separate relay process costs on this machine: the
// extra socket hop and the wake-ups of a second process. On a 2-core
// machine that alone puts keystroke echo at about 1.25-1.3× direct, which
// is issue 11's target 3; the path shows that floor in the same run.
const pathRelay = "relay"

// The hidden relay mode: tgbench re-executes itself with these variables
// set (init below), handing the child its listening socket as fd 3.
const (
	relayTargetEnv   = "TGBENCH_RELAY_TARGET"   // the engine: unix:///path or tcp://host:port
	relayLifetimeEnv = "TGBENCH_RELAY_LIFETIME" // the process exits after this long, whatever happens
)

func init() {
	// Before flags and before the test framework: the relay process is
	// this binary (or the test binary) with the variables set.
	if target := os.Getenv(relayTargetEnv); target != "" {
		os.Exit(relayMain(target, os.Getenv(relayLifetimeEnv)))
	}
}

// relayMain is the relay process: accept on fd 3, dial the engine for each
// connection, copy both ways. It exits after its lifetime (a bound should
// tgbench die without killing it; it also gets SIGTERM from the kernel).
func relayMain(target, lifetime string) int {
	life, err := time.ParseDuration(lifetime)
	if err != nil || life <= 0 {
		fmt.Fprintf(os.Stderr, "tgbench relay: %s %q: want a positive duration\n", relayLifetimeEnv, lifetime)
		return 2
	}
	network, addr, err := relayTarget(target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tgbench relay:", err)
		return 2
	}
	ln, err := net.FileListener(os.NewFile(3, "relay listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tgbench relay: the listener (fd 3):", err)
		return 2
	}
	time.AfterFunc(life, func() { os.Exit(0) }) // ends the connections too
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "tgbench relay: accept:", err)
			return 1
		}
		go relayConn(c, network, addr)
	}
}

// relayConn copies c to the engine and back until either side ends, then
// closes both.
func relayConn(c net.Conn, network, addr string) {
	d, err := net.Dial(network, addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tgbench relay: dial the engine:", err)
		c.Close()
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(d, c)
		c.Close()
		d.Close()
		close(done)
	}()
	_, _ = io.Copy(c, d)
	c.Close()
	d.Close()
	<-done
}

// relayTarget maps the engine's address (the Docker client's DaemonHost)
// to what net.Dial takes. A TLS engine cannot be relayed this way (the
// client would verify the relay's name).
func relayTarget(host string) (network, addr string, err error) {
	u, err := client.ParseHostURL(host)
	if err != nil {
		return "", "", err
	}
	switch u.Scheme {
	case "unix", "tcp":
		return u.Scheme, u.Host, nil
	}
	return "", "", fmt.Errorf("engine address %s: the relay anchor handles unix:// and tcp:// engines only (-relay=false leaves it out)", host)
}

// relay is the relay process as the parent sees it.
type relay struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
	// view is a run whose Docker client dials the relay: dialDirect and
	// resize on it go through the relay.
	view *env
}

// startRelay starts the relay process on a unix socket in the state
// directory, forwarding to the engine, and a Docker client that dials it.
// The socket listens before the child starts (the parent creates it and
// passes it on), so there is nothing to wait for.
func (e *env) startRelay(ctx context.Context) (err error) {
	if tls := os.Getenv("DOCKER_TLS_VERIFY"); tls != "" {
		return errors.New("the engine uses TLS (DOCKER_TLS_VERIFY): the relay anchor relays plain connections only")
	}
	if _, _, err := relayTarget(e.dockerHost); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to run it as the relay: %w", err)
	}
	sock := filepath.Join(e.dir, "relay.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(false) // the child listens on it; the state directory goes at teardown
	f, err := ln.File()
	ln.Close()
	if err != nil {
		return err
	}
	defer f.Close() // the child has its own descriptor
	r := &relay{exited: make(chan struct{}), log: filepath.Join(e.dir, "relay.log")}
	logFile, err := os.Create(r.log)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// Setup and cleanup are bounded separately, about 30 s each.
	life := e.cfg.timeout + 2*time.Minute
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), relayTargetEnv+"="+e.dockerHost, relayLifetimeEnv+"="+life.String())
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the relay (%s): %w", self, err)
	}
	r.cmd = cmd
	go func() { _ = cmd.Wait(); close(r.exited) }()
	defer func() {
		if err != nil {
			r.stop()
		}
	}()
	cli, err := client.NewClientWithOpts(client.WithHost("unix://"+sock), client.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Errorf("docker client for the relay: %w", err)
	}
	r.view = &env{cfg: e.cfg, docker: cli, dockerHost: cli.DaemonHost()}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		return fmt.Errorf("ping the engine through the relay: %w%s", err, r.logTail())
	}
	e.relay = r
	return nil
}

// logTail is the relay's log, to append to an error.
func (r *relay) logTail() string {
	data, _ := os.ReadFile(r.log)
	if s := strings.TrimSpace(string(data)); s != "" {
		return "\n  relay log: " + s
	}
	return ""
}

// pid is the relay process's id, for its CPU time.
func (r *relay) pid() int { return r.cmd.Process.Pid }

// stop kills the relay and waits for it. Its connections were closed by
// then (the shells are closed before teardown); killing it ends any left.
func (r *relay) stop() {
	if r == nil || r.cmd == nil {
		return
	}
	if r.view != nil && r.view.docker != nil {
		_ = r.view.docker.Close()
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
	r.cmd = nil
}

// dialRelay is dial's pathRelay: the direct exec and its resize, through
// the relay.
func dialRelay(ctx context.Context, e *env, instance string) (*directTerm, error) {
	if e.relay == nil {
		if e.relayErr != nil {
			return nil, fmt.Errorf("the relay anchor did not start: %w", e.relayErr)
		}
		return nil, errors.New("the relay anchor is off (-relay=false)")
	}
	t, err := dialDirect(ctx, e.relay.view, instance)
	if err != nil {
		return nil, err
	}
	return t, t.resize(ctx)
}

// withRelay adds the relay path to ps when it is on.
func withRelay(cfg *config, ps []string) []string {
	if cfg.relay {
		return append(append([]string(nil), ps...), pathRelay)
	}
	return ps
}
