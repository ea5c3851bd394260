package docker

import (
	"context"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/termgate/termgate/sessions"
)

// List returns the running containers that are instances (labelled when
// Config.Label is set, never the gateway's own), by name.
func (b *Backend) List(ctx context.Context) ([]sessions.Instance, error) {
	list, err := b.cli.ContainerList(ctx, container.ListOptions{Filters: b.listFilters()})
	if err != nil {
		return nil, b.engineErr("list containers", err)
	}
	out := make([]sessions.Instance, 0, len(list))
	for _, c := range list {
		if b.isSelf(c.ID) || len(c.Names) == 0 {
			continue
		}
		name := strings.TrimPrefix(c.Names[0], "/")
		if sessions.CheckName(name) != nil {
			continue // reachable by no one: refused by Lookup too
		}
		out = append(out, sessions.Instance{Name: name, ID: c.ID,
			Listing: &sessions.Listing{Image: c.Image, Status: c.Status, Labels: sessions.PublicLabels(c.Labels)}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
