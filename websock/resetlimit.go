package websock

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/termgate/termgate/internal/buckets"
)

// Reset rate limits (issue 9 item 11a: 28,076 resets sent in 20 s on 8
// sockets, two execs each). A reset by POST or by control message takes one
// token from its instance's bucket and one from its identity's (the token
// behind the credential), or is refused with how long to wait. The
// instance's rate is the one the registry applies to the resets holders
// announce (buckets.InstanceResets).
var (
	resetInstanceBurst = buckets.InstanceResets.Burst
	resetInstanceEvery = buckets.InstanceResets.Every
)

const (
	// resetsPerIdentity: a burst of 10, then one a second.
	resetIdentityBurst = 10
	resetIdentityEvery = time.Second
)

// resetLimiter is a token bucket per instance and per identity.
type resetLimiter struct {
	now func() time.Time

	mu         sync.Mutex // guards the tables
	instances  *buckets.Table
	identities *buckets.Table
}

func newResetLimiter(now func() time.Time) *resetLimiter {
	return &resetLimiter{now: now,
		instances:  buckets.New(buckets.InstanceResets),
		identities: buckets.New(buckets.Rate{Every: resetIdentityEvery, Burst: resetIdentityBurst})}
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
	in := l.instances.Get(instance, now)
	id := l.identities.Get(string(identity), now)
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
