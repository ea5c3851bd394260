package sessions

import (
	"sort"
	"time"
)

// Attached is one attached client as "list" and GET /api/sessions show it.
type Attached struct {
	Who      string    `json:"who"`
	Via      string    `json:"via"`
	Remote   string    `json:"remote"`
	Since    time.Time `json:"since"`
	ReadOnly bool      `json:"read_only"`
	// Granted: an observer a writer let type (presence.go); ReadOnly is
	// then false. Hand: an observer's raised hand.
	Granted bool `json:"granted,omitempty"`
	Hand    bool `json:"hand,omitempty"`
	// LastInput is when the client last typed (Registry.Who only).
	LastInput *time.Time `json:"last_input,omitempty"`
}

// attachedList describes clients, oldest first; never nil, so the JSON
// field is an empty array rather than null.
func attachedList(clients map[*Client]struct{}) []Attached { return describeClients(clients, false) }

// describeClients is attachedList, with LastInput when withInput (Who: a
// published snapshot would show a stale one).
func describeClients(clients map[*Client]struct{}, withInput bool) []Attached {
	out := make([]Attached, 0, len(clients))
	for c := range clients {
		a := c.attachedOf()
		if withInput {
			a.LastInput = c.lastInputOf()
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Remote < out[j].Remote
	})
	return out
}
