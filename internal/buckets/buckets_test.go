package buckets

import (
	"fmt"
	"testing"
	"time"
)

// A bucket gives its burst, then one token per interval; a refusal says
// how long until the next and takes nothing.
func TestTakeRefillsAtItsRate(t *testing.T) {
	tb := New(Rate{Every: 2 * time.Second, Burst: 3})
	now := time.Unix(1000, 0)
	for i := range 3 {
		if _, ok := tb.Take("a", now); !ok {
			t.Fatalf("take %d of the burst refused", i+1)
		}
	}
	retry, ok := tb.Take("a", now)
	if ok || retry != 2*time.Second {
		t.Fatalf("take after the burst: ok %v, retry %s; want refused, 2s", ok, retry)
	}
	if _, ok := tb.Take("b", now); !ok {
		t.Fatal("another key's bucket is empty too")
	}
	if retry, ok := tb.Take("a", now.Add(time.Second)); ok || retry != time.Second {
		t.Fatalf("half an interval later: ok %v, retry %s; want refused, 1s", ok, retry)
	}
	if _, ok := tb.Take("a", now.Add(2*time.Second)); !ok {
		t.Fatal("a token did not come back after an interval")
	}
}

// The table stays bounded: full buckets are dropped first, then others.
func TestTableIsBounded(t *testing.T) {
	tb := New(Rate{Every: time.Hour, Burst: 1})
	now := time.Unix(1000, 0)
	for i := range maxBuckets + 100 {
		tb.Take(fmt.Sprint(i), now)
	}
	if n := tb.Len(); n > maxBuckets {
		t.Fatalf("%d buckets, want at most %d", n, maxBuckets)
	}
}
