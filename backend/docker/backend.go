package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/sessions"
)

// Config configures a Backend. The zero value is usable.
type Config struct {
	// Client is the Engine API client; nil means a client from the
	// environment (DOCKER_HOST, DOCKER_TLS_VERIFY, ...) with API version
	// negotiation, owned and closed by the Backend.
	Client client.APIClient
	// Label, "KEY" or "KEY=VALUE", limits instances to the containers
	// carrying it; empty means every container.
	Label string
	// Shell is the default command for a session's shell; empty means bash
	// when the container has it, else sh. StartSpec.Shell overrides it.
	Shell []string
	// Logger receives what Sweep ended and Watch's reconnects; nil means
	// slog.Default().
	Logger *slog.Logger
	// SelfID is the gateway's own container ID (full or a prefix of at least
	// 12 characters), which is never an instance; empty means detect it
	// (see DetectSelfID; when containers are nested, every container around
	// the gateway is refused).
	SelfID string
	// GatewayID identifies this gateway's shells (stable across restarts,
	// distinct between gateways sharing an engine): markers become
	// GATEWAYID.SESSION and Sweep ends only markers with this prefix. Empty
	// means one gateway per engine: Sweep ends every termgate shell.
	GatewayID string

	// Durable holds sessions in a holder copied into the instance (over
	// the archive API), so they outlive the gateway (exechost.Durable).
	exechost.Durable

	// StopGrace is how long a shell killed by a signal (or a holder whose
	// connection ended) waits for its container to be reported stopped
	// before the signal is taken for the shell's own exit status (the
	// connection for merely lost); zero means 2 s.
	StopGrace time.Duration
}

// Backend implements sessions.Backend over the Docker Engine API. Its
// shells, kills and holders are the exec host's (exechost), over the
// engine's execs (exec.go) and archive uploads (upload.go).
type Backend struct {
	*exechost.Host
	cli       client.APIClient
	ownClient bool
	labelKey  string
	labelVal  string
	hasValue  bool
	label     string
	log       *slog.Logger
	selfIDs   []string // lower-case IDs or ID prefixes of the gateway's own containers

	running running // the instances known to run, while Watch runs (running.go)
}

var (
	_ sessions.Backend = (*Backend)(nil)
	_ sessions.Adopter = (*Backend)(nil)
)

// New returns a Backend for cfg. It does not contact the engine; call Ping
// for that.
func New(cfg Config) (*Backend, error) {
	b := &Backend{cli: cfg.Client, log: cfg.Logger, label: cfg.Label}
	if b.log == nil {
		b.log = slog.Default()
	}
	host, err := exechost.New(engine{b}, exechost.Config{
		Name: "docker", GatewayID: cfg.GatewayID, Shell: cfg.Shell, Logger: b.log,
		Durable: cfg.Durable, StopGrace: cfg.StopGrace,
	})
	if err != nil {
		return nil, err
	}
	b.Host = host
	if cfg.Label != "" {
		key, val, hasValue := strings.Cut(cfg.Label, "=")
		if key == "" {
			return nil, fmt.Errorf("instance label %q: the key is empty (use KEY or KEY=VALUE)", cfg.Label)
		}
		b.labelKey, b.labelVal, b.hasValue = key, val, hasValue
	}
	if self := strings.ToLower(strings.TrimSpace(cfg.SelfID)); self == "" {
		b.selfIDs = detectSelfIDs(os.ReadFile, os.Hostname)
	} else if len(self) < 12 {
		return nil, fmt.Errorf("self container id %q: use the full id or at least 12 characters", cfg.SelfID)
	} else {
		b.selfIDs = []string{self}
	}
	if b.cli == nil {
		cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			return nil, fmt.Errorf("docker client from environment: %w", err)
		}
		b.cli, b.ownClient = cli, true
	}
	return b, nil
}

// Close releases the Engine API client when the Backend created it. Processes
// already started keep working until they are killed.
func (b *Backend) Close() error {
	if b.ownClient {
		return b.cli.Close()
	}
	return nil
}

// ErrEngineUnreachable is wrapped by the errors of a Backend that could not
// reach the Docker engine.
var ErrEngineUnreachable = errors.New("docker engine unreachable")

// UnreachableError says that the engine at Host could not be reached, why,
// and how to fix it.
type UnreachableError struct {
	Host string
	Err  error
}

func (e *UnreachableError) Error() string {
	host := e.Host
	if host == "" {
		host = "the default socket"
	}
	return fmt.Sprintf("cannot reach the Docker engine at %s: %v; start dockerd (or Docker Desktop), "+
		"set DOCKER_HOST to a running engine, or run termgate with --backend local", host, e.Err)
}

// Unwrap makes errors.Is match both ErrEngineUnreachable and the cause.
func (e *UnreachableError) Unwrap() []error { return []error{ErrEngineUnreachable, e.Err} }

// Ping reports whether the engine answers. Its error is an
// *UnreachableError telling the operator how to fix it.
func (b *Backend) Ping(ctx context.Context) error {
	if _, err := b.cli.Ping(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("ping docker engine: %w", ctx.Err())
		}
		return &UnreachableError{Host: b.cli.DaemonHost(), Err: err}
	}
	return nil
}

// engineErr turns a connection failure into an *UnreachableError and wraps
// anything else with what.
func (b *Backend) engineErr(what string, err error) error {
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("%s: %w", what, &UnreachableError{Host: b.cli.DaemonHost(), Err: err})
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Lookup resolves a running container by its name. Missing, stopped or
// restarting containers, containers without the configured label,
// containers whose name is not exactly name (an ID prefix, say) and the
// gateway's own container are all refused with an error wrapping
// sessions.ErrNotFound; a paused instance with one wrapping
// sessions.ErrPaused (nothing can be started or killed in it until it is
// unpaused). While Watch runs, a container found running is
// remembered until an event about it, and looked up again without asking
// the engine (running.go).
func (b *Backend) Lookup(ctx context.Context, name string) (sessions.Instance, error) {
	if err := sessions.CheckName(name); err != nil {
		return sessions.Instance{}, err
	}
	if inst, ok := b.running.get(name); ok {
		return inst, nil
	}
	gen, watching := b.running.begin()
	info, err := b.cli.ContainerInspect(ctx, name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return sessions.Instance{}, fmt.Errorf("instance %q: %w", name, sessions.ErrNotFound)
		}
		return sessions.Instance{}, b.engineErr(fmt.Sprintf("inspect container %q", name), err)
	}
	refuse := func(why string) (sessions.Instance, error) {
		return sessions.Instance{}, fmt.Errorf("instance %q %s: %w", name, why, sessions.ErrNotFound)
	}
	switch {
	case strings.TrimPrefix(info.Name, "/") != name:
		return refuse("is not a container name")
	case b.isSelf(info.ID):
		return refuse("is the gateway's own container")
	case info.State == nil || !info.State.Running || info.State.Restarting:
		return refuse("is not running")
	case !b.hasLabel(labelsOf(info.Config)):
		return refuse("lacks the instance label")
	case info.State.Paused: // after the label: names outside it stay unknown
		return sessions.Instance{}, fmt.Errorf("instance %q: %w", name, sessions.ErrPaused)
	}
	inst := sessions.Instance{Name: name, ID: info.ID}
	if watching {
		b.running.put(gen, inst)
	}
	return inst, nil
}

func labelsOf(cfg *container.Config) map[string]string {
	if cfg == nil {
		return nil
	}
	return cfg.Labels
}

func (b *Backend) hasLabel(labels map[string]string) bool {
	if b.labelKey == "" {
		return true
	}
	v, ok := labels[b.labelKey]
	return ok && (!b.hasValue || v == b.labelVal)
}

func (b *Backend) isSelf(id string) bool {
	id = strings.ToLower(id)
	for _, self := range b.selfIDs {
		if strings.HasPrefix(id, self) {
			return true
		}
	}
	return false
}

// listFilters selects the running containers that may be instances.
func (b *Backend) listFilters() filters.Args {
	f := filters.NewArgs(filters.Arg("status", "running"))
	if b.label != "" {
		f.Add("label", b.label)
	}
	return f
}
