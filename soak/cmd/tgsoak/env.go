package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// labelKey marks every container tgsoak creates; its value is the run id.
// Every gateway runs with --instance-label labelKey=RUN, so its start-up
// sweep and its instances are this run's containers only.
const labelKey = "termgate.soak"

// soakShell is the shell every gateway starts (--shell): it makes the
// shells easy to count in `ps` (background jobs are `sleep`).
const soakShell = "/bin/sh"

// keyCount SSH keys share the cycles and the streaming clients: a key may
// hold at most 20 connections (sshd.Config).
const keyCount = 4

// Bounds for steps that are not the cases themselves.
const (
	dockerWait  = 30 * time.Second
	healthzWait = 20 * time.Second
	stopWithin  = 10 * time.Second // the contract's SIGTERM bound
)

// env is what one run shares: credentials, the temporary directory, the
// main engine and everything to remove at the end.
type env struct {
	cfg   *config
	runID string
	dir   string // temporary directory: state dirs, logs, private engines
	bin   string // absolute path of the termgate binary
	logf  func(string, ...any)

	main     *engine // the engine DOCKER_HOST names
	hostPriv ed25519.PrivateKey
	hostKey  ssh.PublicKey
	signers  []ssh.Signer
	keyFiles []string // the signers as OpenSSH private key files
	token    string

	mu         sync.Mutex // guards containers, gateways, engines, seq
	containers map[*engine][]string
	gateways   []*gateway
	engines    []*privateEngine
	seq        int
}

func newEnv(ctx context.Context, cfg *config, logf func(string, ...any)) (e *env, err error) {
	bin, err := filepath.Abs(cfg.termgate)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("termgate binary %s not found or not executable: build it first (make build) or pass -termgate PATH", cfg.termgate)
	}
	var id [3]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	e = &env{cfg: cfg, runID: hex.EncodeToString(id[:]), bin: bin, logf: logf,
		main: &engine{name: "main"}, containers: map[*engine][]string{}}
	if e.dir, err = os.MkdirTemp("", "tgsoak-"+e.runID+"-"); err != nil {
		return nil, err
	}
	if err := e.makeCredentials(); err != nil {
		return e, err
	}
	cctx, cancel := context.WithTimeout(ctx, dockerWait)
	defer cancel()
	if _, err := e.main.docker(cctx, "version", "--format", "{{.Server.Version}}"); err != nil {
		return e, fmt.Errorf("the Docker engine is unreachable: %v\n  run `bash scripts/ensure-docker.sh` or point DOCKER_HOST at an engine", err)
	}
	if _, err := e.main.docker(cctx, "image", "inspect", "--format", "{{.Id}}", cfg.image); err != nil {
		return e, fmt.Errorf("image %s not found: build it with `bash scripts/test-image.sh` (or make test-image): %v", cfg.image, err)
	}
	return e, nil
}

// makeCredentials creates the host key, keyCount client keys (also as
// OpenSSH key files) and a token. Every gateway's state directory gets the
// same ones (writeState).
func (e *env) makeCredentials() error {
	var err error
	if _, e.hostPriv, err = ed25519.GenerateKey(rand.Reader); err != nil {
		return err
	}
	hs, err := ssh.NewSignerFromKey(e.hostPriv)
	if err != nil {
		return err
	}
	e.hostKey = hs.PublicKey()
	keyDir := filepath.Join(e.dir, "keys")
	if err := os.Mkdir(keyDir, 0o700); err != nil {
		return err
	}
	for i := range keyCount {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return err
		}
		s, err := ssh.NewSignerFromKey(priv)
		if err != nil {
			return err
		}
		block, err := ssh.MarshalPrivateKey(priv, "")
		if err != nil {
			return err
		}
		path := filepath.Join(keyDir, "id_"+strconv.Itoa(i))
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return err
		}
		e.signers = append(e.signers, s)
		e.keyFiles = append(e.keyFiles, path)
	}
	var tok [24]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return err
	}
	e.token = hex.EncodeToString(tok[:])
	return nil
}

// writeState fills a gateway's state directory: host key, authorized_keys,
// token file.
func (e *env) writeState(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	block, err := ssh.MarshalPrivateKey(e.hostPriv, "tgsoak host key")
	if err != nil {
		return err
	}
	var ak bytes.Buffer
	for i, s := range e.signers {
		fmt.Fprintf(&ak, "%s soak%d\n", bytes.TrimSpace(ssh.MarshalAuthorizedKey(s.PublicKey())), i)
	}
	files := map[string][]byte{
		"ssh_host_ed25519_key": pem.EncodeToMemory(block),
		"authorized_keys":      ak.Bytes(),
		"api_token":            []byte(e.token + " soak\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// next returns a number unique in this run (container names, state dirs).
func (e *env) next() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	return e.seq
}

// label is the --instance-label of every gateway and the label of every
// container.
func (e *env) label() string { return labelKey + "=" + e.runID }

// startContainers starts n containers on eng, like `docker run -d --init
// --network none --label termgate.soak=RUN IMAGE`, in parallel, and
// returns their names (tgsoak-RUN-WHAT-N).
func (e *env) startContainers(ctx context.Context, eng *engine, what string, n int) ([]string, error) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("tgsoak-%s-%s-%d", e.runID, what, e.next())
	}
	e.mu.Lock()
	e.containers[eng] = append(e.containers[eng], names...)
	e.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, dockerWait+time.Duration(n)*time.Second)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, errs[i] = eng.docker(cctx, "run", "-d", "--init", "--network", "none",
				"--label", e.label(), "--name", name, e.cfg.image)
		})
	}
	wg.Wait()
	return names, errors.Join(errs...)
}

// teardown stops every gateway and private engine and removes every
// container and the temporary directory (unless -keep). It runs after an
// interrupt too, so it uses its own bounds.
func (e *env) teardown() error {
	var errs []error
	e.mu.Lock()
	gws, engines := e.gateways, e.engines
	e.mu.Unlock()
	for _, g := range gws {
		if g.running() {
			if _, err := g.sigterm(); err != nil {
				errs = append(errs, fmt.Errorf("gateway %s: %w", g.name, err))
			}
		}
	}
	e.mu.Lock()
	conts := e.containers
	e.containers = map[*engine][]string{}
	e.mu.Unlock()
	for eng, names := range conts {
		if len(names) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), dockerWait+time.Duration(len(names))*time.Second)
		out, err := eng.docker(ctx, append([]string{"rm", "-f"}, names...)...)
		cancel()
		if err != nil && !strings.Contains(err.Error(), "No such container") && eng.alive() {
			errs = append(errs, fmt.Errorf("remove containers on %s: %v %s (remove them with: docker rm -f $(docker ps -aq --filter label=%s))", eng.name, err, out, e.label()))
		}
	}
	for _, pe := range engines {
		if err := pe.shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	if e.dir != "" {
		if e.cfg.keep {
			e.logf("kept %s (gateway logs: *.log)", e.dir)
		} else if err := removeAll(e.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeAll removes a directory that may hold a private engine's data root
// (vfs layers with read-only directories).
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = exec.Command("chmod", "-R", "u+w", dir).Run()
	return os.RemoveAll(dir)
}
