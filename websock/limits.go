package websock

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// clientKey is the address a rate limit applies to: the client's IPv4
// address, or the /64 network of its IPv6 address (one host usually holds a
// whole /64, so per-address limits on IPv6 would be free to evade). An
// unparsable RemoteAddr (a handler mounted behind something that sets none)
// gives the zero prefix, which all such requests share.
//
// X-Forwarded-For and similar headers are never consulted: behind a reverse
// proxy every client has the proxy's address (see SECURITY.md).
func clientKey(remoteAddr string) netip.Prefix {
	a, err := netip.ParseAddr(remoteAddr)
	if err != nil {
		host, _, splitErr := net.SplitHostPort(remoteAddr)
		if splitErr != nil {
			return netip.Prefix{}
		}
		if a, err = netip.ParseAddr(host); err != nil {
			return netip.Prefix{}
		}
	}
	a = a.Unmap().WithZone("")
	bits := 64
	if a.Is4() {
		bits = 32
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return netip.Prefix{}
	}
	return p
}

// addrLimiter is a token bucket per client address. The table is bounded:
// when it is full, buckets that have refilled completely (which are as good
// as new) are dropped, and if that frees too little, arbitrary ones are, so
// an attacker spraying addresses cannot grow memory without bound; the
// buckets it drops are then mostly the attacker's own.
type addrLimiter struct {
	every rate.Limit
	burst int
	max   int
	now   func() time.Time

	mu sync.Mutex // guards m
	m  map[netip.Prefix]*rate.Limiter
}

// maxTrackedAddrs bounds each limiter's table (about 100 bytes a bucket).
const maxTrackedAddrs = 1 << 16

func newAddrLimiter(every rate.Limit, burst int, now func() time.Time) *addrLimiter {
	return &addrLimiter{every: every, burst: burst, max: maxTrackedAddrs, now: now, m: map[netip.Prefix]*rate.Limiter{}}
}

// bucketLocked returns key's bucket, creating it; l.mu must be held.
func (l *addrLimiter) bucketLocked(key netip.Prefix, now time.Time) *rate.Limiter {
	b, ok := l.m[key]
	if ok {
		return b
	}
	if len(l.m) >= l.max {
		l.shrinkLocked(now)
	}
	b = rate.NewLimiter(l.every, l.burst)
	l.m[key] = b
	return b
}

// shrinkLocked makes room: it drops full buckets, then arbitrary ones until
// the table is at most 7/8 full, so that the next max/8 new addresses cost
// nothing (the sweep is amortised).
func (l *addrLimiter) shrinkLocked(now time.Time) {
	for k, b := range l.m {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.m, k)
		}
	}
	for k := range l.m { // map order is unspecified: an arbitrary victim
		if len(l.m) <= l.max-l.max/8 {
			break
		}
		delete(l.m, k)
	}
}

// allow takes one token from key's bucket; when there is none it says how
// long until there is.
func (l *addrLimiter) allow(key netip.Prefix) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucketLocked(key, now)
	if b.AllowN(now, 1) {
		return true, 0
	}
	return false, l.waitLocked(b, now)
}

// blocked reports, without taking a token, whether key's bucket is empty,
// and for how long it stays so.
func (l *addrLimiter) blocked(key netip.Prefix) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[key]
	if !ok || b.TokensAt(now) >= 1 {
		return false, 0
	}
	return true, l.waitLocked(b, now)
}

// take takes one token from key's bucket, when it has one, and reports
// whether the bucket is now empty.
func (l *addrLimiter) take(key netip.Prefix) (empty bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucketLocked(key, now)
	if !b.AllowN(now, 1) {
		return true
	}
	return b.TokensAt(now) < 1
}

// waitLocked is how long until b holds one token.
func (l *addrLimiter) waitLocked(b *rate.Limiter, now time.Time) time.Duration {
	missing := 1 - b.TokensAt(now)
	if missing <= 0 || l.every <= 0 {
		return 0
	}
	return time.Duration(missing / float64(l.every) * float64(time.Second))
}

// tooMany answers 429 with a Retry-After in whole seconds (at least 1).
func tooMany(w http.ResponseWriter, retry time.Duration, msg string) {
	secs := int(math.Ceil(retry.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, msg)
}
