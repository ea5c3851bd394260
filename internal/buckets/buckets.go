// Package buckets is a table of token buckets, one per key, bounded in
// size: the reset rate limits of the listeners (a bucket per instance and
// per identity) and of the registry (a bucket per instance for the resets
// its holders announce) are the same buckets.
package buckets

import (
	"time"

	"golang.org/x/time/rate"
)

// InstanceResets is the rate of resets one instance may have, whoever asks
// for them: a burst of 5, then one every 2 s (issue 9 item 11a: 28,076
// resets in 20 s on 8 sockets, two execs each).
var InstanceResets = Rate{Every: 2 * time.Second, Burst: 5}

// Rate is a bucket's refill interval and size.
type Rate struct {
	Every time.Duration
	Burst int
}

// maxBuckets bounds a table; full buckets are dropped first.
const maxBuckets = 1 << 14

// Table holds a bucket per key. It is not safe for concurrent use: its
// owner holds its own lock around it.
type Table struct {
	rate Rate
	m    map[string]*rate.Limiter
}

// New returns an empty table of buckets of rate r.
func New(r Rate) *Table { return &Table{rate: r, m: map[string]*rate.Limiter{}} }

// Rate is the table's bucket rate.
func (t *Table) Rate() Rate { return t.rate }

// Get returns key's bucket, creating it full; when the table is full it
// first drops the buckets that have refilled (they are as good as new),
// then arbitrary ones.
func (t *Table) Get(key string, now time.Time) *rate.Limiter {
	if b, ok := t.m[key]; ok {
		return b
	}
	if len(t.m) >= maxBuckets {
		for k, b := range t.m {
			if b.TokensAt(now) >= float64(t.rate.Burst) {
				delete(t.m, k)
			}
		}
		for k := range t.m {
			if len(t.m) < maxBuckets-maxBuckets/8 {
				break
			}
			delete(t.m, k)
		}
	}
	b := rate.NewLimiter(rate.Every(t.rate.Every), t.rate.Burst)
	t.m[key] = b
	return b
}

// Take takes a token from key's bucket. When there is none it takes
// nothing and says how long until there is one.
func (t *Table) Take(key string, now time.Time) (retry time.Duration, ok bool) {
	b := t.Get(key, now)
	if tok := b.TokensAt(now); tok < 1 {
		return time.Duration((1 - tok) * float64(t.rate.Every)), false
	}
	b.AllowN(now, 1)
	return 0, true
}

// Len is how many buckets the table holds (for tests).
func (t *Table) Len() int { return len(t.m) }
