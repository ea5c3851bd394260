package audit

import "sync"

// Counts are the totals of the records written for commands and
// transfers, for Prometheus (metrics.AuditCollector). Counting the
// records, not the code paths, keeps one definition for the SSH and the
// HTTP side: whatever is audited is counted, once.
type Counts struct {
	// Commands by result (ok, denied, failed).
	Commands map[string]uint64
	// Transfers by direction and result. Direction is upload or
	// download for a file; "session" for an SFTP session's own record
	// (its refusal, failure or end).
	Transfers map[[2]string]uint64
	// TransferBytes by direction, of the files' records.
	TransferBytes map[string]uint64
}

// counter keeps Counts. Its lock guards the maps only; nothing is called
// under it.
type counter struct {
	mu    sync.Mutex
	cmds  map[string]uint64
	xfers map[[2]string]uint64
	bytes map[string]uint64
}

// count adds a record of action with its detail (key-value pairs).
func (c *counter) count(action string, detail []any) {
	if action != Command && action != Transfer {
		return
	}
	var result, dir string
	var n uint64
	for i := 0; i+1 < len(detail); i += 2 {
		switch detail[i] {
		case "result":
			result, _ = detail[i+1].(string)
		case "direction":
			dir, _ = detail[i+1].(string)
		case "bytes":
			n = asCount(detail[i+1])
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if action == Command {
		if c.cmds == nil {
			c.cmds = map[string]uint64{}
		}
		c.cmds[result]++
		return
	}
	if dir == "" {
		dir = "session"
	}
	if c.xfers == nil {
		c.xfers, c.bytes = map[[2]string]uint64{}, map[string]uint64{}
	}
	c.xfers[[2]string{dir, result}]++
	if dir != "session" {
		c.bytes[dir] += n
	}
}

// asCount is a byte count of any integer type; 0 for anything else.
func asCount(v any) uint64 {
	switch n := v.(type) {
	case int:
		return uint64(max(n, 0))
	case int64:
		return uint64(max(n, 0))
	case uint64:
		return n
	case uint32:
		return uint64(n)
	case int32:
		return uint64(max(n, 0))
	}
	return 0
}

// Counts returns a copy of the totals so far (empty for a nil Log).
func (a *Log) Counts() Counts {
	out := Counts{Commands: map[string]uint64{}, Transfers: map[[2]string]uint64{}, TransferBytes: map[string]uint64{}}
	if a == nil {
		return out
	}
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	for k, v := range a.c.cmds {
		out.Commands[k] = v
	}
	for k, v := range a.c.xfers {
		out.Transfers[k] = v
	}
	for k, v := range a.c.bytes {
		out.TransferBytes[k] = v
	}
	return out
}
