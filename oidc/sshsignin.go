package oidc

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/termgate/termgate/internal/buckets"
)

// Signing in over plain ssh (contract, "Single sign-on"): the SSH server
// answers keyboard-interactive with a URL under the gateway's public URL
// and a code (Broker.Begin); the person opens it, signs in in the browser
// and approves (Broker.Approve, from the gateway's own page); the waiting
// connection then goes on as that identity, and its public key is
// remembered for it (Keys) for the key TTL, so the next ssh goes straight
// in. Both are in memory: a restart forgets them (people sign in again).

// Approved is an identity a browser approved for an SSH connection.
type Approved struct {
	Email  string
	Groups []string
	// Expires is when what it lets in ends (the key TTL).
	Expires time.Time
}

// SSHSignin is one keyboard-interactive sign-in waiting for its browser.
type SSHSignin struct {
	Code    string
	Remote  string // the SSH client's address, shown on the approval page
	Created time.Time
	done    chan struct{}
	result  Approved
}

// Broker holds the SSH sign-ins waiting for a browser.
type Broker struct {
	mu      sync.Mutex
	pending map[string]*SSHSignin
	perAddr *buckets.Table // sign-ins started, by client address (SigninsPerAddr)
}

// SigninsPerAddr is how often one client address may start an SSH
// sign-in: a burst of 5, then one every 10 s (a flood of connections that
// each ask for a code is refused with the time to wait).
var SigninsPerAddr = buckets.Rate{Every: 10 * time.Second, Burst: 5}

// MaxPending bounds the sign-ins that wait at once: each holds an
// unauthenticated SSH connection, which the SSH server's own caps bound
// too.
const MaxPending = 256

// ErrTooManySignins refuses a sign-in while MaxPending wait.
var ErrTooManySignins = errors.New("too many sign-ins are waiting for a browser; try again in a minute")

// NewBroker makes an empty broker.
func NewBroker() *Broker {
	return &Broker{pending: map[string]*SSHSignin{}, perAddr: buckets.New(SigninsPerAddr)}
}

// codeAlphabet has no look-alikes (no 0/O, 1/I/L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// newCode is XXXX-XXXX: 40 bits, guessed only by someone who can also
// sign in (an approval needs a browser sign-in).
func newCode() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	out := make([]byte, 0, 9)
	for i, x := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, codeAlphabet[int(x)%len(codeAlphabet)])
	}
	return string(out)
}

// Begin registers a sign-in for the client at remote (host:port; the
// rate is per host).
func (b *Broker) Begin(remote string) (*SSHSignin, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) >= MaxPending {
		return nil, ErrTooManySignins
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	if retry, ok := b.perAddr.Take(host, time.Now()); !ok {
		return nil, fmt.Errorf("too many sign-ins from %s: try again in %s", host, retry.Round(time.Second))
	}
	s := &SSHSignin{Code: newCode(), Remote: remote, Created: time.Now(), done: make(chan struct{})}
	for b.pending[s.Code] != nil {
		s.Code = newCode()
	}
	b.pending[s.Code] = s
	return s, nil
}

// End forgets s (its connection stopped waiting).
func (b *Broker) End(s *SSHSignin) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[s.Code] == s {
		delete(b.pending, s.Code)
	}
}

// Lookup finds a waiting sign-in by its code.
func (b *Broker) Lookup(code string) (*SSHSignin, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.pending[code]
	return s, ok
}

// Approve completes the sign-in with code as a; it is then no longer
// waiting.
func (b *Broker) Approve(code string, a Approved) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.pending[code]
	if !ok {
		return fmt.Errorf("no SSH sign-in waits with the code %q (it ended or timed out: run ssh again)", code)
	}
	delete(b.pending, code)
	s.result = a
	close(s.done)
	return nil
}

// Wait blocks until a browser approves s or ctx ends.
func (s *SSHSignin) Wait(ctx context.Context) (Approved, error) {
	select {
	case <-s.done:
		return s.result, nil
	case <-ctx.Done():
		return Approved{}, ctx.Err()
	}
}

// Keys remembers the public keys of signed-in SSH connections, by
// fingerprint, until their TTL.
type Keys struct {
	mu   sync.Mutex
	byFP map[string]Approved
	max  int
}

// NewKeys makes an empty key store holding at most max keys (the oldest
// to expire goes first).
func NewKeys(max int) *Keys { return &Keys{byFP: map[string]Approved{}, max: max} }

// Remember binds the key with fingerprint fp to a.
func (k *Keys) Remember(fp string, a Approved) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.byFP[fp]; !ok && len(k.byFP) >= k.max {
		var first string
		for f, x := range k.byFP {
			if first == "" || x.Expires.Before(k.byFP[first].Expires) {
				first = f
			}
		}
		delete(k.byFP, first)
	}
	k.byFP[fp] = a
}

// Lookup returns the identity the key signed in as, while it lasts.
func (k *Keys) Lookup(fp string, now time.Time) (Approved, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	a, ok := k.byFP[fp]
	if !ok {
		return Approved{}, false
	}
	if !now.Before(a.Expires) {
		delete(k.byFP, fp)
		return Approved{}, false
	}
	return a, true
}

// Forget drops the key (ssh HOST logout); false if it was not signed in.
func (k *Keys) Forget(fp string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.byFP[fp]
	delete(k.byFP, fp)
	return ok
}

// Expired drops the keys whose TTL passed by now and reports whether any
// did (their connections are then cut: the caller rechecks them).
func (k *Keys) Expired(now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	any := false
	for fp, a := range k.byFP {
		if !now.Before(a.Expires) {
			delete(k.byFP, fp)
			any = true
		}
	}
	return any
}
