package websock

import (
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Reset rate limits (issue 9 item 11a: 28,076 resets sent in 20 s on 8
// sockets, two execs each). A reset by POST or by control message takes one
// token from its instance's bucket and one from its identity's (the token
// behind the credential), or is refused with how long to wait.
const (
	// resetsPerInstance: a burst of 5, then one every 2 s.
	resetInstanceBurst = 5
	resetInstanceEvery = 2 * time.Second
	// resetsPerIdentity: a burst of 10, then one a second.
	resetIdentityBurst = 10
	resetIdentityEvery = time.Second
	// maxResetBuckets bounds each table; full buckets are dropped first.
	maxResetBuckets = 1 << 14
)

// resetLimiter is a token bucket per instance and per identity.
type resetLimiter struct {
	now func() time.Time

	mu         sync.Mutex // guards the maps
	instances  map[string]*rate.Limiter
	identities map[string]*rate.Limiter
}

func newResetLimiter(now func() time.Time) *resetLimiter {
	return &resetLimiter{now: now, instances: map[string]*rate.Limiter{}, identities: map[string]*rate.Limiter{}}
}

// errTooManyResets says who is limited and for how long.
type errTooManyResets struct {
	what  string
	retry time.Duration
}

func (e *errTooManyResets) Error() string {
	secs := int(math.Ceil(e.retry.Seconds()))
	if secs < 1 {
		secs = 1
	}
	return fmt.Sprintf("too many resets %s: wait %d s before resetting again", e.what, secs)
}

// allow takes a token from both buckets, or from neither: a refused reset
// costs nothing.
func (l *resetLimiter) allow(instance string, identity []byte) *errTooManyResets {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	in := bucket(l.instances, instance, rate.Every(resetInstanceEvery), resetInstanceBurst, now)
	id := bucket(l.identities, string(identity), rate.Every(resetIdentityEvery), resetIdentityBurst, now)
	if t := in.TokensAt(now); t < 1 {
		return &errTooManyResets{what: fmt.Sprintf("of instance %q", instance), retry: wait(1-t, resetInstanceEvery)}
	}
	if t := id.TokensAt(now); t < 1 {
		return &errTooManyResets{what: "by this token", retry: wait(1-t, resetIdentityEvery)}
	}
	in.AllowN(now, 1)
	id.AllowN(now, 1)
	return nil
}

func wait(missing float64, every time.Duration) time.Duration {
	return time.Duration(missing * float64(every))
}

// bucket returns key's bucket, creating it; when the table is full it first
// drops the buckets that have refilled (they are as good as new), then
// arbitrary ones.
func bucket(m map[string]*rate.Limiter, key string, r rate.Limit, burst int, now time.Time) *rate.Limiter {
	if b, ok := m[key]; ok {
		return b
	}
	if len(m) >= maxResetBuckets {
		for k, b := range m {
			if b.TokensAt(now) >= float64(burst) {
				delete(m, k)
			}
		}
		for k := range m {
			if len(m) < maxResetBuckets-maxResetBuckets/8 {
				break
			}
			delete(m, k)
		}
	}
	b := rate.NewLimiter(r, burst)
	m[key] = b
	return b
}
