package sessions

import (
	"context"
	"errors"
	"sort"
)

// Lister is an optional Backend capability: listing the running instances.
type Lister interface {
	List(ctx context.Context) ([]Instance, error)
}

// ErrNoListing: the backend cannot list its instances.
var ErrNoListing = errors.New("this backend cannot list its instances")

// InstanceInfo is one instance with its default session, if it has one,
// and all its sessions, named ones included.
type InstanceInfo struct {
	Name    string `json:"name"`
	Session *Info  `json:"session"`
	// Sessions are the instance's sessions, oldest first, the default one
	// included (the page lists the named ones and opens them as tabs).
	Sessions []Info `json:"sessions"`
	// From the backend's listing, when it has them.
	Image  string            `json:"image,omitempty"`
	Status string            `json:"status,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Instances lists the backend's running instances with their sessions;
// may filters what the caller is allowed to see. Instances that have a
// session but that the backend does not list (local instances without an
// allow-list) are included too.
func (r *Registry) Instances(ctx context.Context, may func(string) bool) ([]InstanceInfo, error) {
	byName := map[string]*InstanceInfo{}
	if l, ok := r.cfg.Backend.(Lister); ok {
		list, err := l.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, in := range list {
			info := &InstanceInfo{Name: in.Name}
			if l := in.Listing; l != nil {
				info.Image, info.Status, info.Labels = l.Image, l.Status, l.Labels
			}
			byName[in.Name] = info
		}
	}
	for _, s := range r.Sessions() {
		if byName[s.Instance] == nil {
			byName[s.Instance] = &InstanceInfo{Name: s.Instance}
		}
		in := byName[s.Instance]
		in.Sessions = append(in.Sessions, s)
		if s.Name == "" {
			// Only the default session: "session" meant the instance's one
			// session before there were named ones, and still does.
			in.Session = &s
		}
	}
	out := make([]InstanceInfo, 0, len(byName))
	for name, in := range byName {
		if may == nil || may(name) {
			if in.Sessions == nil {
				in.Sessions = []Info{}
			}
			out = append(out, *in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
