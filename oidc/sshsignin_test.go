package oidc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func req(remote string) Request {
	return Request{Remote: remote, User: "web-1", ClientVersion: "SSH-2.0-OpenSSH_9.6", Fingerprints: []string{"SHA256:fp-" + remote}}
}

// TestBrokerFloodAndApprove: one address may start SigninsPerAddr's
// burst of sign-ins, then waits; a typed code binds its one request to
// the browser sign-in that typed it, works once, and the ticket it gives
// approves once, for that sign-in only.
func TestBrokerFloodAndApprove(t *testing.T) {
	b := NewBroker()
	var first *SSHSignin
	for i := range SigninsPerAddr.Burst {
		s, err := b.Begin(req("10.0.0.1:4000"))
		if err != nil {
			t.Fatalf("sign-in %d: %v", i, err)
		}
		if first == nil {
			first = s
		}
	}
	if _, err := b.Begin(req("10.0.0.1:4001")); err == nil || !strings.Contains(err.Error(), "too many sign-ins from 10.0.0.1") {
		t.Fatalf("past the burst: %v", err)
	}
	other, err := b.Begin(req("10.0.0.2:4000"))
	if err != nil {
		t.Fatalf("another address: %v", err)
	}
	if _, _, _, err := b.Claim("NOPE-NOPE", "victim"); !errors.Is(err, ErrNoSuchCode) {
		t.Fatalf("an unknown code: %v", err)
	}
	// Typed in lower case with spaces, it is the same code; what it
	// shows is that request's, not another's.
	typed := strings.ToLower(strings.ReplaceAll(first.Code, "-", " "))
	r, _, ticket, err := b.Claim(typed, "victim")
	if err != nil || r.Remote != "10.0.0.1:4000" || r.Fingerprints[0] != "SHA256:fp-10.0.0.1:4000" || r.User != "web-1" || r.ClientVersion == "" {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	// A code works once, also for the sign-in that typed it.
	if _, _, _, err := b.Claim(first.Code, "victim"); !errors.Is(err, ErrNoSuchCode) {
		t.Fatalf("a code typed twice: %v", err)
	}
	// The ticket is the claiming sign-in's: another sign-in (an attacker
	// who saw the page's ticket) cannot use it.
	if _, err := b.Decide(ticket, "attacker", true, Approved{Email: "evil@b"}); !errors.Is(err, ErrNoTicket) {
		t.Fatalf("another sign-in's ticket: %v", err)
	}
	if _, err := b.Decide(ticket, "victim", true, Approved{Email: "a@b", Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// A replayed approval is refused.
	if _, err := b.Decide(ticket, "victim", true, Approved{Email: "a@b"}); !errors.Is(err, ErrNoTicket) {
		t.Fatalf("a replayed approval: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if a, err := first.Wait(ctx); err != nil || a.Email != "a@b" {
		t.Fatalf("wait: %+v, %v", a, err)
	}
	// Deny ends the waiting ssh with ErrDenied, naming who denied it.
	_, _, t2, err := b.Claim(other.Code, "victim")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Decide(t2, "victim", false, Approved{Email: "a@b"}); err != nil {
		t.Fatal(err)
	}
	if a, err := other.Wait(ctx); !errors.Is(err, ErrDenied) || a.Email != "a@b" {
		t.Fatalf("denied: %+v, %v", a, err)
	}
	// A sign-in nobody approves ends at its bound.
	s, _ := b.Begin(req("10.0.0.3:1"))
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := s.Wait(short); err == nil {
		t.Fatal("an unapproved sign-in did not end")
	}
	// An ended sign-in's claimed ticket goes with it.
	s2, _ := b.Begin(req("10.0.0.4:1"))
	_, _, t3, _ := b.Claim(s2.Code, "victim2")
	b.End(s2)
	if _, err := b.Decide(t3, "victim2", true, Approved{}); !errors.Is(err, ErrNoTicket) {
		t.Fatalf("an ended sign-in's ticket: %v", err)
	}
}

// TestCodeBruteForce: one browser sign-in types at most CodeTries.Burst
// codes, right or wrong, then waits a minute; another sign-in is not
// held back by it.
func TestCodeBruteForce(t *testing.T) {
	b := NewBroker()
	s, _ := b.Begin(req("10.0.0.1:1"))
	for i := range CodeTries.Burst {
		if _, _, _, err := b.Claim("AAAA-AAA"+string(codeAlphabet[i]), "guesser"); !errors.Is(err, ErrNoSuchCode) {
			t.Fatalf("guess %d: %v", i, err)
		}
	}
	// Past the limit even the right code is refused.
	if _, _, _, err := b.Claim(s.Code, "guesser"); !errors.Is(err, ErrCodeTries) || !strings.Contains(err.Error(), "try again in") {
		t.Fatalf("past the limit: %v", err)
	}
	if _, _, _, err := b.Claim(s.Code, "owner"); err != nil {
		t.Fatalf("the owner's sign-in: %v", err)
	}
}

func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{
		"ABCD-EFGH": "ABCD-EFGH", "abcd efgh": "ABCD-EFGH", " abcdefgh ": "ABCD-EFGH",
		"ABCD-EFG": "", "ABCD-EFGH1": "", "ABCD-EFG0": "", "ABCD-ÉFGH": "", "": "",
	} {
		if got := NormalizeCode(in); got != want {
			t.Errorf("NormalizeCode(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzNormalizeCode(f *testing.F) {
	for _, s := range []string{"ABCD-EFGH", "abcd efgh", "", "----", "ÿÿÿÿ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := NormalizeCode(s)
		if c != "" && (len(c) != 9 || NormalizeCode(c) != c) {
			t.Fatalf("NormalizeCode(%q) = %q", s, c)
		}
	})
}
