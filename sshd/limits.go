package sshd

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	gossh "golang.org/x/crypto/ssh"
)

// maxTrackedSources bounds the failure records kept per source before
// expired ones are swept.
const maxTrackedSources = 1 << 16

// limits enforces the caps of Config that protect the gateway from one
// source or one key:
//
//   - unauthenticated connections per source (MaxPreAuthPerIP) and in total
//     (MaxPreAuth): a connection holds a slot from accept until it
//     authenticates or closes; a full table makes room fairly (preauth.go);
//   - the lock-out: a source with AuthFailLimit failed connections within
//     AuthFailWindow is refused for AuthLockout;
//   - authenticated connections (MaxConnsPerKey) and sessions
//     (MaxSessionsPerKey) per key.
//
// A source is an IPv4 address or an IPv6 /64 (one host usually holds a
// whole /64); addresses without an IP (pipes) share one source.
type limits struct {
	cfg   *Config
	clock clockwork.Clock

	mu           sync.Mutex                      // guards the fields below; taken after Server.mu, never before
	preauth      map[netip.Prefix][]*preauthConn // oldest first (preauth.go)
	preauthTotal int
	failures     map[netip.Prefix]*failures
	keyConns     map[string]int // by capKey
	keySessions  map[string]int // by capKey
}

// failures is one source's recent failed connections.
type failures struct {
	at          []time.Time // within AuthFailWindow, oldest first
	lockedUntil time.Time
}

func newLimits(cfg *Config) *limits {
	return &limits{
		cfg: cfg, clock: cfg.Clock,
		preauth: map[netip.Prefix][]*preauthConn{}, failures: map[netip.Prefix]*failures{},
		keyConns: map[string]int{}, keySessions: map[string]int{},
	}
}

// sourceOf is the source a remote address counts against.
func sourceOf(remote net.Addr) netip.Prefix {
	var ip netip.Addr
	if a, ok := remote.(*net.TCPAddr); ok && a != nil {
		ip, _ = netip.AddrFromSlice(a.IP)
	} else if remote != nil {
		if ap, err := netip.ParseAddrPort(remote.String()); err == nil {
			ip = ap.Addr()
		}
	}
	if !ip.IsValid() {
		return netip.Prefix{}
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// refusedLockedOut: a connection from a locked-out source is refused.
const refusedLockedOut = "source locked out after repeated authentication failures"

// lockedOut reports whether src is locked out now, and until when.
func (l *limits) lockedOut(src netip.Prefix) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.failures[src]; f != nil && l.clock.Now().Before(f.lockedUntil) {
		return f.lockedUntil, true
	}
	return time.Time{}, false
}

// failed records a connection from src that ended with failed
// authentication attempts and no success. started reports that this
// failure began a lock-out, lasting until until.
func (l *limits) failed(src netip.Prefix) (until time.Time, started bool) {
	if l.cfg.AuthFailLimit < 0 {
		return time.Time{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	f := l.failures[src]
	if f == nil {
		if len(l.failures) >= maxTrackedSources {
			l.sweepLocked(now)
		}
		f = &failures{}
		l.failures[src] = f
	}
	if now.Before(f.lockedUntil) {
		return f.lockedUntil, false // opened before the lock-out began
	}
	f.at = append(recent(f.at, now.Add(-l.cfg.AuthFailWindow)), now)
	if len(f.at) < l.cfg.AuthFailLimit {
		return time.Time{}, false
	}
	f.at = nil
	f.lockedUntil = now.Add(l.cfg.AuthLockout)
	return f.lockedUntil, true
}

// recent drops the times before since from at (oldest first).
func recent(at []time.Time, since time.Time) []time.Time {
	i := 0
	for i < len(at) && !at[i].After(since) {
		i++
	}
	return at[i:]
}

// sweepLocked forgets sources with no failure in the window and no
// lock-out running.
func (l *limits) sweepLocked(now time.Time) {
	since := now.Add(-l.cfg.AuthFailWindow)
	for src, f := range l.failures {
		if f.at = recent(f.at, since); len(f.at) == 0 && !now.Before(f.lockedUntil) {
			delete(l.failures, src)
		}
	}
}

// failureCount is how many failures of src are in the current window (for
// tests and logs).
func (l *limits) failureCount(src netip.Prefix) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.failures[src]; f != nil {
		return len(recent(f.at, l.clock.Now().Add(-l.cfg.AuthFailWindow)))
	}
	return 0
}

// keyConn takes one of key's connection slots (MaxConnsPerKey).
func (l *limits) keyConn(key string) (release func(), ok bool) {
	return l.take(l.keyConns, l.cfg.MaxConnsPerKey, key)
}

// keySession takes one of key's session slots (MaxSessionsPerKey).
func (l *limits) keySession(key string) (release func(), ok bool) {
	return l.take(l.keySessions, l.cfg.MaxSessionsPerKey, key)
}

func (l *limits) take(m map[string]int, max int, key string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if max > 0 && m[key] >= max {
		return nil, false
	}
	m[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if m[key]--; m[key] <= 0 {
				delete(m, key)
			}
		})
	}, true
}

// capKey is what the per-key caps count: the fingerprint of the key, the
// certified key for a certificate (a new certificate for the same key
// shares its slots).
func capKey(key gossh.PublicKey) string {
	if cert, ok := key.(*gossh.Certificate); ok {
		key = cert.Key
	}
	return gossh.FingerprintSHA256(key)
}

// keyLabel names a key in the audit trail as keys.Identity.Fingerprint
// does: its fingerprint, or for a certificate the certified key's
// fingerprint and the serial.
func keyLabel(key gossh.PublicKey) string {
	if cert, ok := key.(*gossh.Certificate); ok {
		return fmt.Sprintf("%s serial=%d", gossh.FingerprintSHA256(cert.Key), cert.Serial)
	}
	return gossh.FingerprintSHA256(key)
}
