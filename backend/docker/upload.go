package docker

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/termgate/termgate/backend/exechost"
	"github.com/termgate/termgate/sessions"
)

// Durable sessions, Docker side: the holder is copied in with the Engine
// API's archive upload. The container's configuration rules out some
// directories at once (HolderDirs): a read-only root filesystem refuses
// every upload, even to a tmpfs on it; a tmpfs mount is one the archive API
// cannot see into (an upload "succeeds" into the directory under it;
// Docker's /dev/shm is one, and noexec too).

// HolderDirs returns the exechost.HolderDirs the container's configuration
// leaves (a *exechost.CannotHold when none).
func (e engine) HolderDirs(ctx context.Context, inst sessions.Instance) ([]string, error) {
	info, err := e.cli.ContainerInspect(ctx, inst.ID)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("inspect container: %w: %w", sessions.ErrNotFound, err)
		}
		return nil, e.engineErr("inspect container", err)
	}
	var tmpfs []string
	if hc := info.HostConfig; hc != nil {
		if hc.ReadonlyRootfs {
			return nil, &exechost.CannotHold{Why: "its root filesystem is read-only"}
		}
		for p := range hc.Tmpfs {
			tmpfs = append(tmpfs, p)
		}
	}
	for _, m := range info.Mounts {
		if m.Type == "tmpfs" {
			tmpfs = append(tmpfs, m.Destination)
		}
	}
	var dirs []string
	for _, dir := range exechost.HolderDirs {
		if !slices.ContainsFunc(tmpfs, func(t string) bool { return dir == t || strings.HasPrefix(dir, strings.TrimSuffix(t, "/")+"/") }) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return nil, &exechost.CannotHold{Why: "every directory it could go to is a tmpfs mount (" + strings.Join(tmpfs, ", ") + ")"}
	}
	return dirs, nil
}

// Exists reports which of paths exist in the container, as the archive API
// sees them (one stat each).
func (e engine) Exists(ctx context.Context, inst sessions.Instance, paths []string) ([]bool, error) {
	have := make([]bool, len(paths))
	for i, p := range paths {
		_, err := e.cli.ContainerStatPath(ctx, inst.ID, p)
		switch {
		case err == nil:
			have[i] = true
		case cerrdefs.IsNotFound(err):
		case client.IsErrConnectionFailed(err):
			return nil, e.engineErr("stat "+p, err)
		}
		// any other refusal: treat as absent, the upload will say why
	}
	return have, nil
}

// Upload copies data into dir (a fresh directory of the upload's own,
// whose random name nobody could create first) as name, owned by the
// container's user, who runs the holder. A read-only root filesystem
// is a *exechost.CannotHold; a missing or refusing directory wraps
// exechost.ErrRefused.
func (e engine) Upload(ctx context.Context, inst sessions.Instance, dir, name string, data []byte) error {
	info, err := e.cli.ContainerInspect(ctx, inst.ID)
	if err != nil {
		return e.engineErr("inspect container", err)
	}
	user := ""
	if info.Config != nil {
		user = info.Config.User
	}
	uid, gid, numeric := numericUser(user)
	// The engine applies a tar's owners unless CopyUIDGID asks it to look
	// the container's user up by name.
	err = e.cli.CopyToContainer(ctx, inst.ID, path.Dir(dir), bytes.NewReader(exechost.HolderTar(data, path.Base(dir), name, uid, gid)),
		container.CopyToContainerOptions{CopyUIDGID: !numeric})
	switch {
	case err == nil:
		return nil
	case client.IsErrConnectionFailed(err):
		return e.engineErr("copy the holder into the instance", err)
	case strings.Contains(err.Error(), "read-only"):
		// No typed check tells this apart: the engine answers a read-only
		// root filesystem or volume with errdefs.InvalidParameter (400,
		// "container rootfs is marked read-only"), the class it uses for
		// any bad copy request, so only the text says read-only.
		return &exechost.CannotHold{Why: "its root filesystem is read-only (" + err.Error() + ")"}
	}
	return fmt.Errorf("copy the holder to %s: %w: %w", path.Dir(dir), exechost.ErrRefused, err)
}

// numericUser reads a container's user ("", "UID" or "UID:GID"; a name
// is not numeric: the engine looks it up in the image's passwd for
// CopyUIDGID, which a bare UID may lack).
func numericUser(user string) (uid, gid int, ok bool) {
	if user == "" {
		return 0, 0, true
	}
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil || uid < 0 {
		return 0, 0, false
	}
	if !hasGroup {
		return uid, 0, true // as the runtime does without a passwd entry
	}
	gid, err = strconv.Atoi(g)
	if err != nil || gid < 0 {
		return 0, 0, false
	}
	return uid, gid, true
}

// Instances lists the running containers that may be instances, for Sweep
// and HeldInstances (paused ones are not running).
func (e engine) Instances(ctx context.Context) ([]sessions.Instance, error) {
	list, err := e.cli.ContainerList(ctx, container.ListOptions{Filters: e.listFilters()})
	if err != nil {
		return nil, e.engineErr("list containers", err)
	}
	var out []sessions.Instance
	for _, c := range list {
		if e.isSelf(c.ID) || c.State == "paused" {
			continue
		}
		name := c.ID[:min(12, len(c.ID))]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, sessions.Instance{Name: name, ID: c.ID})
	}
	return out, nil
}
