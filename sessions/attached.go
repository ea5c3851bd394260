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
}

// attachedList describes clients, oldest first; never nil, so the JSON
// field is an empty array rather than null.
func attachedList(clients map[*Client]struct{}) []Attached {
	out := make([]Attached, 0, len(clients))
	for c := range clients {
		out = append(out, c.who)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Remote < out[j].Remote
	})
	return out
}
