package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/gatewayproc"
)

// labelKey marks every container tgbench creates; its value is the run id.
// The gateway is started with --instance-label labelKey=runID, so its
// startup sweep and its instances are limited to this run's containers.
const labelKey = "termgate.bench"

// Bounds for the steps that are not measurements.
const (
	pingTimeout     = 5 * time.Second
	containerWait   = 30 * time.Second
	gatewayWait     = 30 * time.Second // to listen and answer /healthz
	gatewayStopWait = 12 * time.Second // termgate exits within 10 s of SIGTERM
	removeWait      = 20 * time.Second
)

// env is everything one run sets up: the Docker client, the containers, the
// gateway and its state directory.
type env struct {
	cfg   *config
	runID string
	dir   string // temporary state directory

	docker        *client.Client
	dockerHost    string
	serverVersion string
	apiVersion    string
	containers    []string // names, in creation order; [0] and [1] are used

	signer  ssh.Signer    // the client key in authorized_keys
	signers []ssh.Signer  // every client key in authorized_keys, signer first (see signerFor)
	hostKey ssh.PublicKey // the gateway's host key
	token   string

	gw         *gatewayproc.Gateway // the running gateway; nil before and after
	logPath    string
	openssh    *openSSH // the OpenSSH anchor; nil when it did not start
	opensshErr error    // why it did not start
	relay      *relay   // the relay anchor (relay.go); nil when it did not start
	relayErr   error    // why it did not start
	sshAddr    string
	webAddr    string

	// durable is the run of the --durable gateway (-durable; nil when it is
	// off or did not start): the durable paths go there.
	durable *env
}

// instance returns the name of benchmark container i (0 or 1).
func (e *env) instance(i int) string { return e.containers[i] }

// setup checks Docker and the image, creates the containers and the state
// directory, and starts the gateway. On error everything created so far is
// removed again.
func setup(ctx context.Context, cfg *config, logf func(string, ...any)) (e *env, err error) {
	bin, err := filepath.Abs(cfg.termgate)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("termgate binary %s not found or not executable: build it first (make build, or go build -o bin/termgate ./cmd/termgate) or pass -termgate PATH", cfg.termgate)
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	e = &env{cfg: cfg, runID: hex.EncodeToString(id[:])}
	defer func() {
		if err != nil {
			if terr := e.teardown(logf); terr != nil {
				logf("cleanup after a failed setup: %v", terr)
			}
			e = nil
		}
	}()
	if err := e.connectDocker(ctx); err != nil {
		return e, err
	}
	if err := e.makeState(); err != nil {
		return e, err
	}
	logf("run %s: creating containers from %s", e.runID, cfg.image)
	if err := e.startContainers(ctx, 2); err != nil {
		return e, err
	}
	logf("starting %s", cfg.termgate)
	if err := e.startGateway(ctx, bin); err != nil {
		return e, err
	}
	logf("gateway up: ssh %s, http %s", e.sshAddr, e.webAddr)
	if cfg.openssh {
		if err := e.startOpenSSH(ctx); err != nil {
			// The anchor's metrics fail with this; termgate's are still measured.
			logf("OpenSSH anchor: %v", err)
			e.opensshErr = err
		} else {
			logf("OpenSSH anchor up: sshd on %s, ForceCommand docker exec -it %s", e.openssh.addr, e.instance(0))
		}
	}
	if cfg.relay {
		if err := e.startRelay(ctx); err != nil {
			logf("relay anchor: %v", err) // only its metrics fail
			e.relayErr = err
		}
	}
	return e, nil
}

func (e *env) connectDocker(ctx context.Context) error {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Errorf("docker client from the environment: %w", err)
	}
	e.docker = cli
	e.dockerHost = cli.DaemonHost()
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("cannot reach the Docker engine at %s: %v\n"+
			"  the benchmark needs a running engine: start dockerd, or set DOCKER_HOST to one", e.dockerHost, err)
	}
	v, err := cli.ServerVersion(pctx)
	if err != nil {
		return fmt.Errorf("docker version: %w", err)
	}
	e.serverVersion, e.apiVersion = v.Version, cli.ClientVersion()
	if _, err := cli.ImageInspect(pctx, e.cfg.image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("image %s not found: build it with `bash scripts/test-image.sh` (no image can be pulled here), or pass -image", e.cfg.image)
		}
		return fmt.Errorf("inspect image %s: %w", e.cfg.image, err)
	}
	return nil
}

// makeState writes the state directory: a host key, a client key in
// authorized_keys and a token file, so the gateway generates nothing and
// the client knows the host key in advance.
func (e *env) makeState() error {
	dir, err := os.MkdirTemp("", "tgbench-"+e.runID+"-")
	if err != nil {
		return err
	}
	e.dir = dir
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	block, err := ssh.MarshalPrivateKey(hostPriv, "tgbench host key")
	if err != nil {
		return err
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		return err
	}
	e.hostKey = hostSigner.PublicKey()
	_, clientPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	if e.signer, err = ssh.NewSignerFromKey(clientPriv); err != nil {
		return err
	}
	e.signers = []ssh.Signer{e.signer}
	var authorized []byte
	for i := range keysFor(e.cfg) {
		if i > 0 {
			_, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			s, err := ssh.NewSignerFromKey(priv)
			if err != nil {
				return err
			}
			e.signers = append(e.signers, s)
		}
		authorized = append(authorized, ssh.MarshalAuthorizedKey(e.signers[i].PublicKey())...)
	}
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return err
	}
	e.token = hex.EncodeToString(tok[:])
	files := map[string][]byte{
		"ssh_host_ed25519_key": pem.EncodeToMemory(block),
		"authorized_keys":      authorized,
		"api_token":            []byte(e.token + "\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	e.logPath = filepath.Join(dir, "termgate.log")
	return nil
}

// startContainers creates and starts n containers, like
// `docker run -d --init --network none --label termgate.bench=RUN IMAGE`.
func (e *env) startContainers(ctx context.Context, n int) error {
	cctx, cancel := context.WithTimeout(ctx, containerWait)
	defer cancel()
	init := true
	for i := range n {
		name := fmt.Sprintf("tgbench-%s-%c", e.runID, 'a'+i)
		_, err := e.docker.ContainerCreate(cctx,
			&container.Config{Image: e.cfg.image, Labels: map[string]string{labelKey: e.runID}},
			&container.HostConfig{Init: &init, NetworkMode: "none"},
			nil, nil, name)
		if err != nil {
			return fmt.Errorf("create container %s: %w", name, err)
		}
		e.containers = append(e.containers, name)
		if err := e.docker.ContainerStart(cctx, name, container.StartOptions{}); err != nil {
			return fmt.Errorf("start container %s: %w", name, err)
		}
	}
	return nil
}

// startGateway starts termgate on ports the OS picks and waits for
// /healthz.
func (e *env) startGateway(ctx context.Context, bin string) error {
	args := append([]string{
		"--backend", "docker",
		"--shell", benchShell,
		"--instance-label", labelKey + "=" + e.runID,
		"--idle-timeout", "30m",
		// info, not warn: the listening line gatewayproc reads is an
		// info line (a handful of lines per connection besides).
		"--log-level", "info",
	}, e.cfg.gatewayArgs...)
	gw, err := gatewayproc.Start(ctx, gatewayproc.Config{
		Bin: bin, StateDir: e.dir, Args: args, Env: e.cfg.gatewayEnv,
		LogFile: e.logPath, StartWithin: gatewayWait,
	})
	if err != nil {
		return err
	}
	e.gw, e.sshAddr, e.webAddr = gw, gw.SSHAddr, gw.HTTPAddr
	return nil
}

// stopGateway sends SIGTERM and waits; SIGKILL after gatewayStopWait.
func (e *env) stopGateway() error {
	if e.gw == nil {
		return nil
	}
	defer func() { e.gw = nil }()
	if _, err := e.gw.Stop(gatewayStopWait); err != nil {
		return fmt.Errorf("termgate: %w\n  termgate log (last lines):\n    %s", err, strings.ReplaceAll(e.gw.Tail(20), "\n", "\n    "))
	}
	return nil
}

// teardown stops the gateway, removes the containers and the state
// directory. It does not depend on the run's context: it also runs after an
// interrupt or a timeout.
func (e *env) teardown(logf func(string, ...any)) error {
	var errs []error
	if e.durable != nil {
		if err := e.durable.teardown(logf); err != nil {
			errs = append(errs, fmt.Errorf("the --durable gateway's run: %w", err))
		}
		e.durable = nil
	}
	if e.openssh != nil {
		logf("stopping the OpenSSH anchor")
		e.openssh.stop()
		e.openssh = nil
	}
	if e.relay != nil {
		e.relay.stop()
		e.relay = nil
	}
	if e.gw != nil {
		logf("stopping termgate (SIGTERM)")
		if err := e.stopGateway(); err != nil {
			errs = append(errs, err)
		}
	}
	if e.docker != nil {
		if len(e.containers) > 0 {
			logf("removing containers %s", strings.Join(e.containers, ", "))
		}
		// A few at a time: the memory phase has dozens.
		var mu sync.Mutex
		_ = forEach(context.Background(), len(e.containers), func(_ context.Context, i int) error {
			name := e.containers[i]
			ctx, cancel := context.WithTimeout(context.Background(), removeWait)
			err := e.docker.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
			cancel()
			if err != nil && !cerrdefs.IsNotFound(err) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("remove container %s: %w (remove it with: docker rm -f %s)", name, err, name))
				mu.Unlock()
			}
			return nil
		})
		e.containers = nil
		_ = e.docker.Close()
		e.docker = nil
	}
	if e.dir != "" {
		if e.cfg.keep {
			logf("kept %s (gateway log: %s)", e.dir, e.logPath)
		} else if err := os.RemoveAll(e.dir); err != nil {
			errs = append(errs, err)
		}
		e.dir = ""
	}
	return errors.Join(errs...)
}
