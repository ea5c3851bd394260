package oidc

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/termgate/termgate/internal/buckets"
)

// Signing in over plain ssh (contract, "Single sign-on"): the SSH server
// answers keyboard-interactive with a URL under the gateway's public URL
// and a code (Broker.Begin); the person opens the URL, signs in in the
// browser and types the code their terminal shows (Broker.Claim, which
// binds the one waiting request with that code to that browser sign-in
// and shows what it asks for), then approves or denies it
// (Broker.Decide, with the one-time ticket Claim gave). Approved, the
// waiting connection goes on as that identity and its public key is
// remembered (Store) for the key TTL, or until the approving sign-in
// logs out or expires. The code never travels in a link: someone who
// sends you a link cannot make you approve their key with one click
// (RFC 8628 section 5.4, remote phishing). Waiting requests are in
// memory (an ssh waits on one gateway); remembered keys are shared
// (state.go).

// Approved is an identity a browser approved for an SSH connection.
type Approved struct {
	Issuer, Subject string
	Email           string
	EmailVerified   bool
	Groups          []string
	// SigninID is the browser sign-in that approved; its logout forgets
	// the key.
	SigninID string
	// Expires is when what it lets in ends: the key TTL, or the
	// approving sign-in's expiry if sooner.
	Expires time.Time
	// Browser is the approving browser's address (audit).
	Browser string
}

// Request is what a waiting SSH connection asks for, shown on the page.
type Request struct {
	Remote        string   // the SSH client's address
	User          string   // the login (instance) asked for
	ClientVersion string   // the client's SSH version string
	Fingerprints  []string // the keys it proved it holds
}

// SSHSignin is one keyboard-interactive sign-in waiting for its browser.
type SSHSignin struct {
	Code string
	Request
	Created time.Time
	done    chan struct{}
	result  Approved
	denied  bool

	// set by Claim, under Broker.mu
	claimedBy string // the browser sign-in the typed code bound it to
	ticket    string // the one-time ticket its Approve or Deny carries
}

// ErrDenied ends a sign-in denied in the browser.
var ErrDenied = errors.New("denied in the browser")

// Broker holds the SSH sign-ins waiting for a browser.
type Broker struct {
	mu       sync.Mutex
	pending  map[string]*SSHSignin // by code, until claimed
	byTicket map[string]*SSHSignin // claimed, until decided
	perAddr  *buckets.Table        // sign-ins started, by client address (SigninsPerAddr)
	tries    *buckets.Table        // codes typed, by browser sign-in (CodeTries)
}

// SigninsPerAddr is how often one client address may start an SSH
// sign-in: a burst of 5, then one every 10 s (a flood of connections that
// each ask for a code is refused with the time to wait).
var SigninsPerAddr = buckets.Rate{Every: 10 * time.Second, Burst: 5}

// CodeTries is how often one browser sign-in may type a code: 5 at once,
// then one a minute. With at most MaxPending codes of 40 bits waiting, a
// guess hits one with a chance below 1 in 4 billion.
var CodeTries = buckets.Rate{Every: time.Minute, Burst: 5}

// MaxPending bounds the sign-ins that wait at once: each holds an
// unauthenticated SSH connection, which the SSH server's own caps bound
// too.
const MaxPending = 256

// ErrTooManySignins refuses a sign-in while MaxPending wait.
var ErrTooManySignins = errors.New("too many sign-ins are waiting for a browser; try again in a minute")

// NewBroker makes an empty broker.
func NewBroker() *Broker {
	return &Broker{pending: map[string]*SSHSignin{}, byTicket: map[string]*SSHSignin{},
		perAddr: buckets.New(SigninsPerAddr), tries: buckets.New(CodeTries)}
}

// codeAlphabet has no look-alikes (no 0/O, 1/I/L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// newCode is XXXX-XXXX: 40 bits, typed only by someone who can also
// sign in, and at CodeTries' rate.
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

// NormalizeCode is a typed code as Begin made it: upper case, the dash
// where it belongs, spaces and dashes typed anywhere ignored; "" if it
// cannot be one.
func NormalizeCode(typed string) string {
	if len(typed) > 64 {
		return ""
	}
	var b []byte
	for _, r := range strings.ToUpper(typed) {
		switch {
		case r == '-' || r == ' ' || r == '\t':
		case r < 128 && strings.IndexByte(codeAlphabet, byte(r)) >= 0:
			b = append(b, byte(r))
		default:
			return ""
		}
	}
	if len(b) != 8 {
		return ""
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// Begin registers a sign-in for req (req.Remote is host:port; the rate is
// per host).
func (b *Broker) Begin(req Request) (*SSHSignin, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending)+len(b.byTicket) >= MaxPending {
		return nil, ErrTooManySignins
	}
	host, _, err := net.SplitHostPort(req.Remote)
	if err != nil {
		host = req.Remote
	}
	if retry, ok := b.perAddr.Take(host, time.Now()); !ok {
		return nil, fmt.Errorf("too many sign-ins from %s: try again in %s", host, retry.Round(time.Second))
	}
	req.Fingerprints = slices.Clone(req.Fingerprints)
	s := &SSHSignin{Code: newCode(), Request: req, Created: time.Now(), done: make(chan struct{})}
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
	if s.ticket != "" && b.byTicket[s.ticket] == s {
		delete(b.byTicket, s.ticket)
	}
}

// Claim binds the request waiting with the typed code to the browser
// sign-in signinID and returns what it asks for and the one-time ticket
// that approves or denies it. A code works once; a browser sign-in types
// at most CodeTries' codes.
func (b *Broker) Claim(typed, signinID string) (Request, time.Time, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if retry, ok := b.tries.Take(signinID, time.Now()); !ok {
		return Request{}, time.Time{}, "", fmt.Errorf("%w: too many codes typed; try again in %s", ErrCodeTries, retry.Round(time.Second))
	}
	code := NormalizeCode(typed)
	s, ok := b.pending[code]
	if code == "" || !ok {
		return Request{}, time.Time{}, "", ErrNoSuchCode
	}
	delete(b.pending, code)
	s.claimedBy = signinID
	s.ticket = NewPending().State
	b.byTicket[s.ticket] = s
	r := s.Request
	r.Fingerprints = slices.Clone(r.Fingerprints)
	return r, s.Created, s.ticket, nil
}

// ErrNoSuchCode: no request waits with the typed code.
var ErrNoSuchCode = errors.New("no SSH sign-in waits with this code: check it against your terminal, or run ssh again for a new one (a code works once)")

// ErrCodeTries: the browser sign-in typed too many codes.
var ErrCodeTries = errors.New("too many codes")

// ErrNoTicket: the approval's ticket is unknown, used, or another
// sign-in's.
var ErrNoTicket = errors.New("this SSH sign-in was already approved or denied, or its ssh stopped waiting: run ssh again")

// Decide approves (a) or, with approve false, denies the request claimed
// with ticket by the browser sign-in signinID. A ticket works once.
func (b *Broker) Decide(ticket, signinID string, approve bool, a Approved) (Request, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.byTicket[ticket]
	if !ok || subtle.ConstantTimeCompare([]byte(s.claimedBy), []byte(signinID)) != 1 {
		return Request{}, ErrNoTicket
	}
	delete(b.byTicket, ticket)
	if approve {
		s.result = a
	} else {
		s.denied, s.result = true, a
	}
	close(s.done)
	return s.Request, nil
}

// Wait blocks until a browser approves or denies s (ErrDenied) or ctx
// ends.
func (s *SSHSignin) Wait(ctx context.Context) (Approved, error) {
	select {
	case <-s.done:
		if s.denied {
			return s.result, ErrDenied // who denied it
		}
		return s.result, nil
	case <-ctx.Done():
		return Approved{}, ctx.Err()
	}
}
