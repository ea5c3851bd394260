package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// engine is a Docker engine driven through the docker CLI: the main one
// (DOCKER_HOST, or the default socket) or a private one tgsoak started.
type engine struct {
	name string
	host string         // -H for the CLI and DOCKER_HOST for a gateway; "" for the main engine
	pe   *privateEngine // nil for the main engine
}

// docker runs the docker CLI against the engine and returns its stdout.
func (d *engine) docker(ctx context.Context, args ...string) (string, error) {
	return d.dockerIn(ctx, nil, args...)
}

func (d *engine) dockerIn(ctx context.Context, stdin *os.File, args ...string) (string, error) {
	if d.host != "" {
		args = append([]string{"-H", d.host}, args...)
	}
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	if err := cmd.Run(); err != nil {
		what := args
		if len(what) > 4 {
			what = what[:4]
		}
		return stdout.String(), fmt.Errorf("docker %s: %v: %s", strings.Join(what, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// alive reports whether the engine should answer (a private engine may be
// killed on purpose).
func (d *engine) alive() bool { return d.pe == nil || d.pe.running() }

// gatewayEnv is the environment a gateway on this engine needs.
func (d *engine) gatewayEnv() []string {
	if d.host == "" {
		return nil
	}
	return []string{"DOCKER_HOST=" + d.host}
}

// privateEngine is a second dockerd with its own socket, data root and exec
// root under the run's directory, so that it can be killed and restarted
// without touching the main engine: no TCP listener, no iptables, no
// bridge, vfs storage.
type privateEngine struct {
	e           *env
	eng         *engine
	dir         string
	sock        string
	liveRestore bool
	logPath     string

	cmd    *exec.Cmd
	exited chan struct{}
}

// dockerdPath is the daemon binary; tgsoak skips the engine cases when it
// is missing (and fails them when TERMGATE_REQUIRE_DOCKER=1).
func dockerdPath() (string, error) {
	p, err := exec.LookPath("dockerd")
	if err != nil {
		return "", errors.New("dockerd not found in PATH (install docker.io, or run with -engine=false)")
	}
	if os.Geteuid() != 0 {
		return "", errors.New("a private dockerd needs root (run as root, or with -engine=false)")
	}
	return p, nil
}

// startEngine starts a private engine and loads the run's image into it.
func (e *env) startEngine(ctx context.Context, liveRestore bool) (*privateEngine, error) {
	if _, err := dockerdPath(); err != nil {
		return nil, err
	}
	n := e.next()
	dir := filepath.Join(e.dir, "engine-"+strconv.Itoa(n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	pe := &privateEngine{e: e, dir: dir, sock: filepath.Join(dir, "docker.sock"), liveRestore: liveRestore,
		logPath: filepath.Join(dir, "dockerd.log")}
	name := "private"
	if liveRestore {
		name = "private-live-restore"
	}
	pe.eng = &engine{name: name, host: "unix://" + pe.sock, pe: pe}
	e.mu.Lock()
	e.engines = append(e.engines, pe)
	e.mu.Unlock()
	if err := pe.start(ctx); err != nil {
		return pe, err
	}
	// Load the image: nothing is pulled.
	save := exec.CommandContext(ctx, "docker", "save", e.cfg.image)
	r, w, err := os.Pipe()
	if err != nil {
		return pe, err
	}
	save.Stdout = w
	if err := save.Start(); err != nil {
		r.Close()
		w.Close()
		return pe, fmt.Errorf("docker save %s: %w", e.cfg.image, err)
	}
	w.Close()
	lctx, cancel := context.WithTimeout(ctx, 2*dockerWait)
	defer cancel()
	_, lerr := pe.eng.dockerIn(lctx, r, "load", "-q")
	r.Close()
	serr := save.Wait()
	if err := errors.Join(lerr, serr); err != nil {
		return pe, fmt.Errorf("load %s into the private engine: %w", e.cfg.image, err)
	}
	return pe, nil
}

func (pe *privateEngine) args() []string {
	a := []string{
		"--host", pe.eng.host,
		"--data-root", filepath.Join(pe.dir, "data"),
		"--exec-root", filepath.Join(pe.dir, "exec"),
		"--pidfile", filepath.Join(pe.dir, "dockerd.pid"),
		"--iptables=false", "--ip-forward=false", "--ip-masq=false", "--bridge=none",
		"--storage-driver=vfs",
	}
	if pe.liveRestore {
		a = append(a, "--live-restore")
	}
	return a
}

// start runs dockerd and waits until it answers. dockerd gives its
// containerd 15 s to come up, which a loaded machine can miss after a crash
// (the containers' state is reloaded): it then exits, and is started again,
// twice at most.
func (pe *privateEngine) start(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = pe.startOnce(ctx); err == nil || ctx.Err() != nil || !errors.Is(err, errExited) {
			return err
		}
		pe.e.logf("%s: %v; starting it again", pe.eng.name, err)
		pe.killContainerd()
	}
	return err
}

// errExited: dockerd exited during start-up.
var errExited = errors.New("the private dockerd exited during start-up")

// killContainerd ends a containerd daemon the engine left (not the shims:
// with --live-restore they keep the containers).
func (pe *privateEngine) killContainerd() {
	for _, pid := range processesUnder(pe.dir) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.HasPrefix(b, []byte("containerd\x00")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	time.Sleep(500 * time.Millisecond)
}

func (pe *privateEngine) startOnce(ctx context.Context) error {
	bin, err := dockerdPath()
	if err != nil {
		return err
	}
	if pe.running() {
		return errors.New("the private dockerd is already running")
	}
	// A dockerd killed with SIGKILL leaves its pid file, and the next one
	// refuses to start when that PID has been reused meanwhile.
	_ = os.Remove(filepath.Join(pe.dir, "dockerd.pid"))
	logFile, err := os.OpenFile(pe.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, pe.args()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start dockerd: %w", err)
	}
	pe.cmd, pe.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(pe.exited)
	deadline := time.Now().Add(2 * dockerWait)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := pe.eng.docker(pctx, "version", "--format", "{{.Server.Version}}")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-pe.exited:
			return fmt.Errorf("%w: %s", errExited, pe.logTail(3))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the private dockerd did not answer within %s: %v: %s", 2*dockerWait, err, pe.logTail(8))
		}
	}
}

func (pe *privateEngine) running() bool {
	if pe.cmd == nil {
		return false
	}
	select {
	case <-pe.exited:
		return false
	default:
		return true
	}
}

// kill9 SIGKILLs dockerd (its containerd and the containers' shims are
// left as a crash leaves them).
func (pe *privateEngine) kill9() {
	if !pe.running() {
		return
	}
	_ = pe.cmd.Process.Kill()
	<-pe.exited
}

// shutdown stops dockerd (SIGTERM, then SIGKILL) and any containerd it
// left running. The containers were removed before.
func (pe *privateEngine) shutdown() error {
	var err error
	if pe.running() {
		_ = pe.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-pe.exited:
		case <-time.After(20 * time.Second):
			err = fmt.Errorf("the private dockerd did not stop within 20s of SIGTERM; killed")
			pe.kill9()
		}
	}
	// A dockerd killed with SIGKILL leaves its managed containerd (and a
	// restart may start another): end every process that runs from this
	// engine's directories.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		pids := processesUnder(pe.dir)
		for _, pid := range pids {
			_ = syscall.Kill(pid, sig)
		}
		for i := 0; i < 50 && len(processesUnder(pe.dir)) > 0; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}
	// dockerd bind-mounts its data root onto itself and leaves the mount
	// behind when killed.
	for _, mp := range mountsUnder(pe.dir) {
		_ = syscall.Unmount(mp, syscall.MNT_DETACH)
	}
	if left := processesUnder(pe.dir); len(left) > 0 {
		err = errors.Join(err, fmt.Errorf("processes of the private engine %s still run: %v", pe.dir, left))
	}
	return err
}

// processesUnder lists the processes whose command line mentions dir (a
// private engine's containerd and shims name its exec root).
func processesUnder(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(dir)) {
			out = append(out, pid)
		}
	}
	return out
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && (f[1] == dir || strings.HasPrefix(f[1], dir+"/")) {
			out = append(out, f[1])
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// logTail returns the last n lines of dockerd's log, for an error (the
// directory is removed at the end of the run).
func (pe *privateEngine) logTail(n int) string {
	b, _ := os.ReadFile(pe.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "dockerd log:\n      " + strings.Join(lines, "\n      ")
}
