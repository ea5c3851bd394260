// Command termgate is the SSH + WebSocket gateway to persistent terminal
// sessions in Docker containers, Kubernetes pods (--backend kubernetes) or
// local PTY shells (--backend local).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/termgate/termgate/audit"
	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/backend/docker"
	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/backend/local"
	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/keys"
	"github.com/termgate/termgate/metrics"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
	"github.com/termgate/termgate/sshd"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "completion" {
		os.Exit(completionCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	opts, err := parseFlags(os.Args[1:], os.Getenv)
	if err != nil {
		if errors.Is(err, errHelp) {
			printHelp(os.Stdout, opts)
			return
		}
		fmt.Fprintln(os.Stderr, "termgate:", err)
		fmt.Fprintln(os.Stderr, "Try 'termgate --help' for more information.")
		os.Exit(2)
	}
	if opts.version {
		fmt.Println(versionString())
		return
	}
	log, err := newLogger(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "termgate:", err)
		os.Exit(2)
	}
	setProcs(os.Getenv, log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, opts, log); err != nil {
		log.Error("termgate stopped", "err", err)
		fmt.Fprintln(os.Stderr, "termgate:", err)
		os.Exit(1)
	}
}

// run starts everything, serves until ctx is cancelled, then shuts down:
// the state, the backend and the registry here; each listener's wiring in
// listeners.go; the serving loop in serve.go.
func run(ctx context.Context, o *options, log *slog.Logger) error {
	if err := os.MkdirAll(o.stateDir, 0o700); err != nil {
		return fmt.Errorf("create state directory: %w (set --state-dir to a writable directory)", err)
	}
	auditLog, auditFile, err := openAudit(o, log)
	if err != nil {
		return err
	}
	defer auditFile.Close()
	creds, err := loadCredentials(o, log)
	if err != nil {
		return err
	}
	defer creds.close()

	backend, closeBackend, err := newBackend(ctx, o, backendIDs{gateway: gatewayID(creds.hostKey.PublicKey()), holderSecret: creds.holderSecret}, log)
	if err != nil {
		return err
	}
	defer closeBackend()
	recorder, err := newRecorder(o, log)
	if err != nil {
		return err
	}
	defer closeRecorder(recorder, log)
	reg, err := newRegistry(o, backend, auditLog, recorder, log)
	if err != nil {
		return err
	}
	if o.durable {
		// A holder's replay is kept up to the ring this gateway gives
		// the holders it starts (and keeps per session itself).
		holder.SetReplayLimit(o.bufferSize)
	}
	// Before the listeners, so that no shell starts in an instance before
	// its sweep; the work itself goes on in the background.
	stopStartUp := sync.OnceFunc(startUp(ctx, o, backend, reg))
	defer stopStartUp()
	provider, https, err := signIn(o)
	if err != nil {
		return err
	}
	signinState, err := openSigninState(ctx, o, provider, log, creds.reloaded)
	if err != nil {
		return err
	}
	if signinState != nil {
		signinState.Start()
		defer signinState.Close()
	}
	w := wiring{o: o, log: log, audit: auditLog, creds: creds, reg: reg,
		// Commands, files and forwarding: the container backends (and
		// local) implement remote.Runner (a backend with only some of it
		// gets ErrUnsupported for the rest).
		runner: remote.Partial(backend),
		// One set of switches for both listeners' access decision.
		switches:    keys.Switches{NoPortForwarding: !o.portForwarding, NoFileTransfer: !o.fileTransfer, NoAgentForwarding: !o.agentForwarding},
		provider:    provider,
		https:       https,
		signinState: signinState,
		sshSignIn:   sshSignIn(o, provider, signinState),
		stopStartUp: stopStartUp,
	}
	sshSrv, err := w.sshServer()
	if err != nil {
		return err
	}
	webSrv, err := w.webServer(sshSrv)
	if err != nil {
		return err
	}
	return w.serve(ctx, sshSrv, webSrv)
}

// newRegistry is the session registry the flags describe.
func newRegistry(o *options, backend sessions.Backend, auditLog *audit.Log, recorder *gatewayRecorder, log *slog.Logger) (*sessions.Registry, error) {
	return sessions.New(sessions.Config{
		Backend:     backend,
		BufferSize:  o.bufferSize,
		ClientQueue: clientQueue(o),
		IdleTimeout: o.idleTimeout,
		MaxKeep:     o.maxKeep,
		// Named sessions: per instance, and per credential across them.
		MaxPerInstance: o.maxPerInstance,
		MaxNamedPerWho: o.maxNamedPerKey,
		SizePolicy:     sizePolicy(o.sizePolicy),
		NotifyJoins:    o.notifyJoins,
		Shell:          shellArgv(o.shell),
		OnEnd:          auditSessionEnd(auditLog),
		NewReplayer:    newReplayer(o),
		Logger:         log,
		Observe:        recorder.observe(),
	})
}

// serveErr is what a listener's Serve returned, as run reports it: nil
// once the listener was shut down or closed.
func serveErr(name string, err error) error {
	if err == nil || errors.Is(err, sshd.ErrServerClosed) || errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("%s listener: %w", name, err)
}

// shutdown stops accepting, tells attached clients (the registry ends every
// session with ErrShutdown, which both listeners pass on) and kills every
// shell, within timeout. Durable sessions end with ErrRestart instead, and
// their shells stay with their holders.
func shutdown(timeout time.Duration, log *slog.Logger, reg *sessions.Registry, servers ...interface{ Shutdown(context.Context) error }) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			// Once every session has ended, a listener only waits for
			// clients to hang up: allow them closeGrace, then drop the
			// rest (an SSH connection whose session channel closed can
			// stay open, and would hold the exit to the deadline).
			sctx, scancel := context.WithCancel(ctx)
			defer scancel()
			go func() {
				select {
				case <-reg.Done():
				case <-sctx.Done():
					return
				}
				// The SSH listener's commands, transfers and forwards
				// tell their clients why they end (sftp's failure
				// replies, an exit status) before it may cut them.
				if d, ok := s.(interface{ Drained() <-chan struct{} }); ok {
					select {
					case <-d.Drained():
					case <-sctx.Done():
						return
					}
				}
				select {
				case <-time.After(closeGrace):
					scancel()
				case <-sctx.Done():
				}
			}()
			if err := s.Shutdown(sctx); err != nil {
				if c, ok := s.(interface{ Close() error }); ok {
					_ = c.Close()
				}
				if ctx.Err() != nil {
					log.Warn("listener shutdown cut short", "err", err)
				}
			}
		})
	}
	if err := reg.Shutdown(ctx); err != nil {
		log.Error("sessions did not all end in time", "err", err)
	}
	wg.Wait()
}

// closeGrace is how long clients have to hang up once their sessions ended.
const closeGrace = time.Second

// gatewayID names this gateway's shells in the instances: derived from the
// host key, it survives restarts (so the start-up sweep finds the shells an
// earlier run left) and differs between gateways sharing a Docker engine
// (so one never sweeps another's live shells).
func gatewayID(hostKey gossh.PublicKey) string {
	sum := sha256.Sum256(hostKey.Marshal())
	return "tg" + hex.EncodeToString(sum[:6])
}

// backendIDs is who this gateway is to its backend: its shells' markers
// (gateway) and, with --durable, the secret its holders are keyed with.
type backendIDs struct {
	gateway      string
	holderSecret []byte
}

// durable is --durable's part of a container backend's Config. The
// holders enforce the idle timeout and keep the replay themselves, so they
// get the same settings.
func durable(o *options, id backendIDs) exechost.Durable {
	return exechost.Durable{Enabled: o.durable, HolderSecret: id.holderSecret, IdleTimeout: o.idleTimeout, BufferSize: o.bufferSize,
		Toolbox: exechost.ToolboxMode(o.toolbox)}
}

func newBackend(ctx context.Context, o *options, id backendIDs, log *slog.Logger) (sessions.Backend, func(), error) {
	if o.backend == "local" {
		log.Warn("local backend: instances are shells on this host, as the gateway's user")
		b := local.New(local.Config{Instances: o.localInstances, Logger: log})
		return b, b.Close, nil
	}
	if o.backend == "kubernetes" {
		return newKubernetesBackend(ctx, o, id, log)
	}
	b, err := docker.New(docker.Config{
		Label: o.instanceLabel, Shell: shellArgv(o.shell), Logger: log, GatewayID: id.gateway,
		Durable: durable(o, id),
	})
	if err != nil {
		return nil, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.Ping(pctx); err != nil {
		b.Close()
		return nil, nil, err
	}
	return b, func() { b.Close() }, nil
}

// starter is a backend with start-up work (exechost.Host: Docker and
// Kubernetes).
type starter interface {
	StartUp(ctx context.Context, adopt func(context.Context, sessions.Instance) (bool, error)) (stop func())
}

// startUp starts ending the shells an earlier run left and, with
// --durable, adopting the sessions holders hold (so that list shows them
// before anyone attaches), in the background, instance by instance; an
// attach to an instance waits for that instance alone. The returned stop
// ends that work and waits for it.
func startUp(ctx context.Context, o *options, backend sessions.Backend, reg *sessions.Registry) (stop func()) {
	s, ok := backend.(starter)
	if !ok {
		return func() {}
	}
	var adopt func(context.Context, sessions.Instance) (bool, error)
	if o.durable {
		adopt = reg.AdoptIn
	}
	return s.StartUp(ctx, adopt)
}

func shellArgv(s string) []string {
	if s == "" || s == "auto" {
		return nil
	}
	return strings.Fields(s)
}

// announce prints how to connect. A new token is shown once, in the
// browser URL's fragment (after #): browsers never send a fragment to the
// server, so the token reaches no request line, proxy log or Referer; the
// page takes it from there, exchanges it for its login cookie and removes it
// from the address bar. It is shown only when w is a terminal (a person
// reading): anywhere else (the journal, a file, a container runtime) w is
// kept and read by more people than the token file, and the token never
// expires, so the line names the file instead.
func announce(w io.Writer, terminal bool, o *options, log *slog.Logger, sshAddr, httpAddr net.Addr, hostKey gossh.PublicKey, newToken string, https bool) {
	scheme := "http"
	if https {
		scheme = "https"
	}
	sshPort := sshAddr.(*net.TCPAddr).Port
	// The first --public-host names the gateway; with a port, that is the
	// browsers' (a proxy's), not the listener's.
	host, web := "localhost", "localhost:"+strconv.Itoa(httpAddr.(*net.TCPAddr).Port)
	if hs := splitList(o.publicHost); len(hs) > 0 {
		host, web = hs[0], hs[0]+":"+strconv.Itoa(httpAddr.(*net.TCPAddr).Port)
		if h, _, err := net.SplitHostPort(hs[0]); err == nil {
			host, web = h, hs[0]
		}
	}
	// The host key's fingerprint as ssh-keygen -l prints it: what a
	// user compares with ssh's first "authenticity of host" prompt.
	fp := gossh.FingerprintSHA256(hostKey)
	log.Info("termgate is listening", "ssh", sshAddr.String(), scheme, httpAddr.String(), "backend", o.backend, "host_key", fp, "version", version)
	fmt.Fprintf(w, "\n  SSH:      ssh -t -p %d INSTANCE@%s\n", sshPort, host)
	fmt.Fprintf(w, "  Host key: %s %s (what ssh asks you to confirm the first time)\n", hostKey.Type(), fp)
	switch {
	case newToken != "" && !terminal:
		fmt.Fprintf(w, "  Browser:  %s://%s/#token=TOKEN\n", scheme, web)
		fmt.Fprintf(w, "            (TOKEN: the new token in %s, e.g. sudo cat it; not printed here, as this is no terminal)\n\n", o.tokenFile)
	case newToken != "":
		fmt.Fprintf(w, "  Browser:  %s://%s/#token=%s\n", scheme, web, newToken)
		fmt.Fprintf(w, "            (token generated in %s; it is shown only once)\n\n", o.tokenFile)
	default:
		fmt.Fprintf(w, "  Browser:  %s://%s/  (sign in with a token from %s)\n\n", scheme, web, o.tokenFile)
	}
}

// auditSessionEnd records every session's end in the audit trail: a reap
// after the idle timeout, or a session end with its cause (reset, shell
// exit, instance stopped, shutdown). A durable session the gateway leaves
// to its holder has not ended.
func auditSessionEnd(a *audit.Log) func(sessions.Info, error) {
	return func(in sessions.Info, cause error) {
		if errors.Is(cause, sessions.ErrRestart) || errors.Is(cause, sessions.ErrHolderLost) {
			return // the session goes on in its holder (its clients' detaches are audited)
		}
		action, why := audit.SessionEnd, ""
		if errors.Is(cause, sessions.ErrIdle) {
			action = audit.Reap
		}
		if cause != nil {
			why = cause.Error()
		}
		a.Event(action, audit.Who{Via: "gateway"}, in.Instance, in.Session, "cause", why, "bytes_out", in.BytesOut)
	}
}

// openAudit opens the audit trail --audit-log names: by default
// STATE_DIR/audit.log, beside the state it audits (0600, appended, JSON
// lines), so the main log stays the operational one; "-" puts the records
// into the main log, marked audit=true.
func openAudit(o *options, log *slog.Logger) (*audit.Log, io.Closer, error) {
	path := o.auditLog
	switch path {
	case "-":
		path = ""
	case "":
		path = filepath.Join(o.stateDir, "audit.log")
	}
	a, c, err := audit.Open(path, log)
	if err != nil {
		return nil, nil, fmt.Errorf("%w; or choose another --audit-log (- for the main log)", err)
	}
	if path == "" {
		log.Info("audit records go into this log, marked audit=true")
	} else {
		log.Info("audit trail", "file", path)
	}
	return a, c, nil
}

// requestRate and requestBurst turn --http-rate-limit into websock's
// settings: 0 turns the limit off; the burst is five seconds' worth.
func requestRate(perSecond float64) float64 {
	if perSecond <= 0 {
		return -1
	}
	return perSecond
}

func requestBurst(perSecond float64) int {
	return max(1, int(perSecond*5))
}

// forwardIdle maps --forward-idle-timeout to sshd's ForwardIdleTimeout,
// where zero means the default and negative never: the flag's 0 is never.
func forwardIdle(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// forwardStats reads the SSH listener's forward counters for /metrics.
func forwardStats(s *sshd.Server) func() metrics.ForwardStats {
	return func() metrics.ForwardStats {
		var st metrics.ForwardStats
		st.Opened, st.Refused, st.Failed, st.BytesToTarget, st.BytesFromTarget = s.ForwardStats()
		return st
	}
}
