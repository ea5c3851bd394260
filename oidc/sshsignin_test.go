package oidc

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestBrokerFloodAndApprove: one address may start SigninsPerAddr's
// burst of sign-ins, then waits; an approval reaches the waiting one
// once, and an unknown or used code is refused.
func TestBrokerFloodAndApprove(t *testing.T) {
	b := NewBroker()
	var first *SSHSignin
	for i := range SigninsPerAddr.Burst {
		s, err := b.Begin("10.0.0.1:4000")
		if err != nil {
			t.Fatalf("sign-in %d: %v", i, err)
		}
		if first == nil {
			first = s
		}
	}
	if _, err := b.Begin("10.0.0.1:4001"); err == nil || !strings.Contains(err.Error(), "too many sign-ins from 10.0.0.1") {
		t.Fatalf("past the burst: %v", err)
	}
	if _, err := b.Begin("10.0.0.2:4000"); err != nil {
		t.Fatalf("another address: %v", err)
	}
	if err := b.Approve("NOPE-NOPE", Approved{Email: "a@b"}); err == nil {
		t.Fatal("an unknown code was approved")
	}
	if err := b.Approve(first.Code, Approved{Email: "a@b", Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Approve(first.Code, Approved{Email: "evil@b"}); err == nil {
		t.Fatal("a code was approved twice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if a, err := first.Wait(ctx); err != nil || a.Email != "a@b" {
		t.Fatalf("wait: %+v, %v", a, err)
	}
	// A sign-in nobody approves ends at its bound.
	s, _ := b.Begin("10.0.0.3:1")
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := s.Wait(short); err == nil {
		t.Fatal("an unapproved sign-in did not end")
	}
}

// TestKeysExpireAndForget: a remembered key lasts its TTL, then is gone.
func TestKeysExpireAndForget(t *testing.T) {
	k := NewKeys(2)
	now := time.Now()
	k.Remember("fp1", Approved{Email: "a@b", Expires: now.Add(time.Minute)})
	k.Remember("fp2", Approved{Email: "c@d", Expires: now.Add(time.Hour)})
	k.Remember("fp3", Approved{Email: "e@f", Expires: now.Add(2 * time.Hour)}) // evicts fp1, the first to expire
	if _, ok := k.Lookup("fp1", now); ok {
		t.Error("the store grew past its bound")
	}
	if a, ok := k.Lookup("fp2", now); !ok || a.Email != "c@d" {
		t.Errorf("fp2: %+v %v", a, ok)
	}
	if !k.Expired(now.Add(90 * time.Minute)) {
		t.Error("fp2's expiry was not reported")
	}
	if _, ok := k.Lookup("fp2", now); ok {
		t.Error("an expired key is still let in")
	}
	if !k.Forget("fp3") || k.Forget("fp3") {
		t.Error("forget")
	}
}
