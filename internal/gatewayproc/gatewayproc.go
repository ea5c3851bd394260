package gatewayproc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/holderbin"
	"github.com/termgate/termgate/internal/termtest"
)

// Config says how to start a gateway; Start may be called with one Config
// again and again (a restart).
type Config struct {
	// Bin is the termgate binary (Build makes one).
	Bin string
	// StateDir is --state-dir (empty: the gateway's default).
	StateDir string
	// Args are further flags. They come after the ones Start passes
	// (--ssh-addr 127.0.0.1:0 --http-addr 127.0.0.1:0 --log-format json
	// --state-dir), so a caller may override those; the log must stay
	// JSON at level info or below, or Start finds no listening line.
	Args []string
	// Env is added to the environment, which is this process's without
	// TERMGATE_* (they would set flags; TERMGATE_HOLDER_BINARY, which
	// names the holder a test built, stays) and with HOME=StateDir (so
	// the gateway seeds no keys from the real ~/.ssh).
	Env []string
	// LogFile, when set, also gets the output, appended (it outlives
	// restarts; the in-memory Log is one run's).
	LogFile string
	// TLS is the client configuration for /healthz when the gateway
	// serves HTTPS.
	TLS *tls.Config
	// StartWithin bounds the wait for the listening line and /healthz
	// (default 30 s).
	StartWithin time.Duration
}

// Gateway is one running gateway process.
type Gateway struct {
	Addrs
	// Log is the run's stdout and stderr.
	Log *termtest.Stream

	stateDir string
	cmd      *exec.Cmd
	exited   chan struct{} // closed once the process has exited and its output is copied
	waitErr  error         // cmd.Wait's result; read after exited is closed
}

// Start runs the gateway and returns once it listens and /healthz answers.
// On error the process is gone and the error holds the end of its log.
func Start(ctx context.Context, c Config) (*Gateway, error) {
	within := c.StartWithin
	if within == 0 {
		within = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	args := []string{"--ssh-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--log-format", "json"}
	if c.StateDir != "" {
		args = append(args, "--state-dir", c.StateDir)
	}
	g := &Gateway{Log: termtest.NewStream(), stateDir: c.StateDir, exited: make(chan struct{})}
	var out io.Writer = g.Log
	var logFile *os.File
	if c.LogFile != "" {
		f, err := os.OpenFile(c.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		logFile, out = f, io.MultiWriter(g.Log, f)
	}
	g.cmd = exec.Command(c.Bin, append(args, c.Args...)...)
	g.cmd.Env = environ(c)
	// One writer for both: os/exec then gives the child one pipe, so a log
	// line and the printed addresses never interleave mid-line.
	g.cmd.Stdout, g.cmd.Stderr = out, out
	g.cmd.SysProcAttr = sysProcAttr()
	if err := g.cmd.Start(); err != nil {
		if logFile != nil {
			_ = logFile.Close()
		}
		return nil, fmt.Errorf("start %s: %w", c.Bin, err)
	}
	go func() {
		g.waitErr = g.cmd.Wait()
		if logFile != nil {
			_ = logFile.Close()
		}
		close(g.exited)
	}()
	var err error
	if g.Addrs, err = WaitListening(ctx, g.Log, g.exited); err == nil {
		err = g.waitHealthy(ctx, c.TLS)
	}
	if err != nil {
		if !g.Running() {
			err = fmt.Errorf("%w (%v)", err, g.waitErr)
		}
		g.Kill()
		return nil, fmt.Errorf("gateway %s: %w\n%s", filepath.Base(c.Bin), err, g.Tail(30))
	}
	return g, nil
}

// environ is the child's environment: see Config.Env.
func environ(c Config) []string {
	var env []string
	for _, kv := range os.Environ() {
		flag := strings.HasPrefix(kv, "TERMGATE_") && !strings.HasPrefix(kv, holderbin.EnvBinary+"=")
		if !flag && (c.StateDir == "" || !strings.HasPrefix(kv, "HOME=")) {
			env = append(env, kv)
		}
	}
	if c.StateDir != "" {
		env = append(env, "HOME="+c.StateDir)
	}
	// os/exec keeps the last value of a repeated key, so Env overrides.
	return append(env, c.Env...)
}

// waitHealthy polls /healthz until it answers 200, the process exits or ctx
// ends.
func (g *Gateway) waitHealthy(ctx context.Context, tlsConf *tls.Config) error {
	// No keep-alive: no idle connection (and goroutine) outlives the probe.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsConf}}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/healthz answered %s", resp.Status)
		}
		last = err
		select {
		case <-g.exited:
			return errors.New("it exited before /healthz answered")
		case <-ctx.Done():
			return fmt.Errorf("no answer from /healthz: %v", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// PID is the process's id.
func (g *Gateway) PID() int { return g.cmd.Process.Pid }

// Running reports whether the process has not exited yet.
func (g *Gateway) Running() bool {
	select {
	case <-g.exited:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits for the exit; after within it kills the
// process. It returns how long the exit took, and an error when the process
// had exited before, did not exit within the bound or exited unclean.
func (g *Gateway) Stop(within time.Duration) (time.Duration, error) {
	if !g.Running() {
		return 0, fmt.Errorf("the gateway had exited before SIGTERM: %v", g.waitErr)
	}
	start := time.Now()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, fmt.Errorf("SIGTERM: %w", err)
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case <-g.exited:
	case <-timer.C:
		g.Kill()
		return time.Since(start), fmt.Errorf("the gateway did not exit within %s of SIGTERM; killed", within)
	}
	took := time.Since(start)
	if g.waitErr != nil {
		return took, fmt.Errorf("after SIGTERM the gateway exited with %v", g.waitErr)
	}
	return took, nil
}

// Kill ends the process with SIGKILL (a crash: it tells nobody) and waits
// for it to be gone. It does nothing to a process that has exited.
func (g *Gateway) Kill() {
	_ = g.cmd.Process.Kill()
	<-g.exited
}

// Tail returns the last n lines of the log.
func (g *Gateway) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(g.Log.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// HostKey is the public half of the host key the gateway keeps in its state
// directory (it writes one on its first start).
func (g *Gateway) HostKey() (gossh.PublicKey, error) {
	pemBytes, err := os.ReadFile(filepath.Join(g.stateDir, "ssh_host_ed25519_key"))
	if err != nil {
		return nil, fmt.Errorf("the gateway's host key: %w", err)
	}
	key, err := gossh.ParsePrivateKey(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("the gateway's host key: %w", err)
	}
	return key.PublicKey(), nil
}
