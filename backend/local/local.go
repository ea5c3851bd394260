package local

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"

	"github.com/termgate/termgate/sessions"
)

// Config configures the local backend.
type Config struct {
	// Instances lists the allowed instance names; empty allows every valid
	// name.
	Instances []string
	// Dir is the shells' working directory (default: the gateway's).
	Dir    string
	Logger *slog.Logger
}

// Backend starts local PTY shells.
type Backend struct {
	cfg    Config
	killer *killer // ends the sessions' processes, one /proc walk for all
}

// New returns a local backend.
func New(cfg Config) *Backend {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	closeInheritedOnExec()
	return &Backend{cfg: cfg, killer: newKiller()}
}

var _ sessions.Backend = (*Backend)(nil)

// Lookup accepts every valid name, or the listed ones.
func (b *Backend) Lookup(_ context.Context, name string) (sessions.Instance, error) {
	if err := sessions.CheckName(name); err != nil {
		return sessions.Instance{}, err
	}
	if len(b.cfg.Instances) > 0 && !slices.Contains(b.cfg.Instances, name) {
		return sessions.Instance{}, fmt.Errorf("local instance %q: %w", name, sessions.ErrNotFound)
	}
	return sessions.Instance{Name: name, ID: "local:" + name}, nil
}

// Start starts the shell on a new PTY in its own session.
func (b *Backend) Start(_ context.Context, inst sessions.Instance, spec sessions.StartSpec) (sessions.Process, error) {
	if err := noLogins(spec.Login); err != nil {
		return nil, err
	}
	argv := spec.Shell
	if len(argv) == 0 {
		argv = autoShell()
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = b.cfg.Dir
	cmd.Env = append(append(os.Environ(), spec.Env...), // the client's first: the gateway's own win
		"TERM="+spec.Term,
		"TERMGATE_SESSION="+spec.SessionID,
		"TERMGATE_INSTANCE="+inst.Name,
	)
	return startProcess(cmd, spec.Size, b.killer)
}

func autoShell() []string {
	if p, err := exec.LookPath("bash"); err == nil {
		return []string{p, "--noprofile", "--norc", "-i"}
	}
	return []string{"/bin/sh", "-i"}
}

// Close stops the killer after its round in progress and waits for its
// goroutine (which otherwise ends when no Kill waits for it); a Kill after
// Close fails. Shut the registry down first.
func (b *Backend) Close() { b.killer.close() }

// Watch blocks until ctx is done: local instances never stop.
func (b *Backend) Watch(ctx context.Context, _ func(sessions.InstanceEvent)) error {
	<-ctx.Done()
	return nil
}

// Sweep has nothing to do (see the package comment).
func (b *Backend) Sweep(context.Context) error { return nil }

// Ping always succeeds.
func (b *Backend) Ping(context.Context) error { return nil }

// List returns the allowed instances when Config.Instances names them;
// with every name allowed there is nothing to list.
func (b *Backend) List(context.Context) ([]sessions.Instance, error) {
	out := make([]sessions.Instance, 0, len(b.cfg.Instances))
	for _, name := range b.cfg.Instances {
		out = append(out, sessions.Instance{Name: name, ID: "local:" + name})
	}
	return out, nil
}
