package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// pathOpenSSH is the anchor the issue names: Debian's OpenSSH sshd on a
// loopback port whose ForceCommand runs `docker exec -it CONTAINER /bin/sh`
// for every login — what a gateway built from stock parts costs.
const pathOpenSSH = "openssh"

// sshdCandidates are where Debian's openssh-server puts sshd.
var sshdCandidates = []string{"/usr/sbin/sshd", "/usr/bin/sshd"}

// openSSH is the anchor's sshd, started and stopped by the benchmark.
type openSSH struct {
	addr    string
	user    string
	hostKey ssh.PublicKey
	cmd     *exec.Cmd
	exited  chan struct{}
	log     string
}

// findSSHD returns the sshd binary, or an error that says how to get it.
func findSSHD() (string, error) {
	for _, p := range sshdCandidates {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return p, nil
	}
	return "", errors.New("sshd not found: install Debian's openssh-server (apt-get install openssh-server) for the OpenSSH anchor")
}

// sshdConfig is the anchor's whole configuration: its own host key, the
// benchmark's client key, no PAM, no motd, and every login forced into a
// TTY `docker exec` of the benchmark shell in container.
func sshdConfig(dir, addr, login, container, dockerHost string) string {
	host, port, _ := net.SplitHostPort(addr)
	force := fmt.Sprintf("exec docker exec -it -e TERM=%s %s %s", benchTerm, container, benchShell)
	lines := []string{
		"Port " + port,
		"ListenAddress " + host,
		"HostKey " + filepath.Join(dir, "openssh_host_key"),
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"AllowUsers " + login,
		"StrictModes no",
		"UsePAM no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password",
		"PrintMotd no",
		"PrintLastLog no",
		"UseDNS no",
		"LogLevel ERROR",
		"ForceCommand " + force,
	}
	if dockerHost != "" {
		lines = append(lines, "SetEnv DOCKER_HOST="+dockerHost)
	}
	return strings.Join(lines, "\n") + "\n"
}

// startOpenSSH writes the anchor's host key and configuration into the
// state directory and starts sshd -D on a free loopback port.
func (e *env) startOpenSSH(ctx context.Context) error {
	bin, err := findSSHD()
	if err != nil {
		return err
	}
	u, err := user.Current()
	if err != nil {
		return err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	block, err := ssh.MarshalPrivateKey(priv, "tgbench openssh host key")
	if err != nil {
		return err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.dir, "openssh_host_key"), pem.EncodeToMemory(block), 0o600); err != nil {
		return err
	}
	// sshd refuses to start without its privilege separation directory.
	_ = os.MkdirAll("/run/sshd", 0o755)
	addr, err := sshdAddr()
	if err != nil {
		return err
	}
	dockerHost := os.Getenv("DOCKER_HOST")
	conf := filepath.Join(e.dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(sshdConfig(e.dir, addr, u.Username, e.instance(0), dockerHost)), 0o600); err != nil {
		return err
	}
	o := &openSSH{addr: addr, user: u.Username, hostKey: signer.PublicKey(), exited: make(chan struct{}), log: filepath.Join(e.dir, "sshd.log")}
	logFile, err := os.Create(o.log)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "-D", "-e", "-f", conf)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	o.cmd = cmd
	go func() { _ = cmd.Wait(); close(o.exited) }()
	e.openssh = o
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-o.exited:
			data, _ := os.ReadFile(o.log)
			return fmt.Errorf("sshd exited during startup: %s", strings.TrimSpace(string(data)))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sshd did not listen on %s within 10s", addr)
		}
	}
}

// stop ends the anchor's sshd (its per-connection children end with their
// connections, which the benchmark has closed by then).
func (o *openSSH) stop() {
	if o == nil || o.cmd == nil {
		return
	}
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.exited:
	case <-time.After(5 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.exited
	}
	o.cmd = nil
}

// dialOpenSSH logs in to the anchor; its ForceCommand starts the shell.
func dialOpenSSH(ctx context.Context, e *env) (*sshTerm, error) {
	if e.openssh == nil {
		if e.opensshErr != nil {
			return nil, fmt.Errorf("the OpenSSH anchor did not start: %w", e.opensshErr)
		}
		return nil, errors.New("the OpenSSH anchor is off (-openssh=false)")
	}
	return dialSSHTo(ctx, e.openssh.addr, e.openssh.user, e.openssh.hostKey, e.signer)
}

// sshdAddr returns a loopback address whose port was free a moment ago:
// sshd cannot be told to take a port the OS picks and say which (the
// gateway can, see gatewayproc). Another process taking the port in
// between only fails the anchor's metrics.
func sshdAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}
