package sshd

import (
	"net/netip"
	"time"
)

// preauthMinAge is how long an unauthenticated connection is safe from
// being dropped for a newcomer when no source holds more than its share:
// long enough for a client to finish a handshake it started.
const preauthMinAge = time.Second

// preauthConn is one connection holding a pre-authentication slot.
type preauthConn struct {
	src  netip.Prefix
	at   time.Time
	drop func() // closes the connection
	gone bool   // released or dropped; guarded by limits.mu
}

// Reasons a connection is refused before its handshake (besides the
// lock-out).
const (
	refusedPerSource = "too many unauthenticated connections from this source"
	refusedTotal     = "too many unauthenticated connections"
)

// admit takes a pre-authentication slot for a new connection from src
// (drop closes it). It returns the slot's release (safe to call more than
// once), the connection dropped to make room (nil if none; call it after
// releasing any lock), or why the connection is refused.
//
// The total cap does not lock everyone out when it is full (issue 9 item
// 11b: ten addresses holding ten connections each did): a newcomer takes
// the slot of the oldest connection of the source holding the most slots,
// if that source holds more than the newcomer's source would; failing
// that, the slot of the oldest connection if it is older than
// preauthMinAge. So a few sources cannot crowd out another, and a crowd
// of sources holding one idle connection each cannot keep a newcomer out
// for longer than preauthMinAge.
func (l *limits) admit(src netip.Prefix, drop func()) (release, dropped func(), refused string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.failures[src]; f != nil && l.clock.Now().Before(f.lockedUntil) {
		return nil, nil, refusedLockedOut
	}
	mine := len(l.preauth[src])
	if max := l.cfg.MaxPreAuthPerIP; max > 0 && mine >= max {
		return nil, nil, refusedPerSource
	}
	if max := l.cfg.MaxPreAuth; max > 0 && l.preauthTotal >= max {
		victim := l.preauthVictimLocked(mine + 1)
		if victim == nil {
			return nil, nil, refusedTotal
		}
		l.removePreauthLocked(victim)
		dropped = victim.drop
	}
	pc := &preauthConn{src: src, at: l.clock.Now(), drop: drop}
	l.preauth[src] = append(l.preauth[src], pc)
	l.preauthTotal++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.removePreauthLocked(pc)
	}, dropped, ""
}

// preauthVictimLocked picks the connection a newcomer whose source would
// then hold want slots may replace, or nil.
func (l *limits) preauthVictimLocked(want int) *preauthConn {
	var crowded, oldest *preauthConn
	most := 0
	for _, conns := range l.preauth {
		first := conns[0] // oldest first; a source with none is deleted
		if len(conns) > most || (len(conns) == most && first.at.Before(crowded.at)) {
			most, crowded = len(conns), first
		}
		if oldest == nil || first.at.Before(oldest.at) {
			oldest = first
		}
	}
	switch {
	case most > want:
		return crowded
	case oldest != nil && l.clock.Since(oldest.at) >= preauthMinAge:
		return oldest
	}
	return nil
}

func (l *limits) removePreauthLocked(pc *preauthConn) {
	if pc.gone {
		return
	}
	pc.gone = true
	l.preauthTotal--
	conns := l.preauth[pc.src]
	for i, c := range conns {
		if c == pc {
			conns = append(conns[:i:i], conns[i+1:]...)
			break
		}
	}
	if len(conns) == 0 {
		delete(l.preauth, pc.src)
	} else {
		l.preauth[pc.src] = conns
	}
}
