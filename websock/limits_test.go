package websock

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/termtest"
)

// peer is a client on its own loopback address (127.0.0.2, …): the whole
// of 127/8 is the loopback interface on Linux, so a test can be several
// client addresses at once.
type peer struct {
	e    *env
	ip   string
	http *http.Client
	ws   websocket.Dialer
}

func (e *env) peer(ip string) *peer {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: waitFor}
	tr := &http.Transport{DialContext: d.DialContext}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &peer{
		e: e, ip: ip,
		http: &http.Client{Transport: tr, Timeout: waitFor},
		ws:   websocket.Dialer{NetDialContext: d.DialContext, HandshakeTimeout: waitFor},
	}
}

// do sends a request from p's address and returns the status and body.
func (p *peer) do(method, path string, h http.Header, body string) (int, http.Header, string) {
	p.e.t.Helper()
	req, err := http.NewRequest(method, p.e.base+path, strings.NewReader(body))
	if err != nil {
		p.e.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := p.http.Do(req)
	if err != nil {
		p.e.t.Fatalf("%s %s from %s: %v", method, path, p.ip, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// dial opens a WebSocket from p's address; status is the handshake's HTTP
// status (101 when it succeeded).
func (p *peer) dial(path string, h http.Header) (*wsClient, int) {
	p.e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, resp, err := p.ws.DialContext(ctx, "ws"+strings.TrimPrefix(p.e.base, "http")+path, h)
	if err != nil {
		if resp == nil {
			p.e.t.Fatalf("dial from %s: %v", p.ip, err)
		}
		resp.Body.Close()
		return nil, resp.StatusCode
	}
	p.e.t.Cleanup(func() { _ = c.Close() })
	return &wsClient{t: p.e.t, c: c}, http.StatusSwitchingProtocols
}

// fakeClock is a settable clock for the limiters.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// auditLines decodes the JSON lines of an audit buffer.
func auditLines(t *testing.T, b *termtest.SyncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// Brute force from one address: after AuthFailures wrong tokens every
// further token from it gets 429, the right one included, until the
// allowance refills; a user on another address logs in and attaches, a
// browser on the attacker's address that logged in before keeps working,
// and a session attached before the attack keeps working throughout.
func TestBruteForceIsLockedOutOthersUnaffected(t *testing.T) {
	clock := newFakeClock()
	var auditBuf termtest.SyncBuffer
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) {
		c.AuthFailures = 0 // the defaults: 10, one more every 30s
		c.AuthFailureEvery = 0
		c.Audit = audit.New(&auditBuf)
	})
	if e.srv.cfg.AuthFailures != 10 || e.srv.cfg.AuthFailureEvery != 30*time.Second {
		t.Fatalf("defaults: %d every %v", e.srv.cfg.AuthFailures, e.srv.cfg.AuthFailureEvery)
	}
	e.srv.failures.now = clock.Now
	attacker, user := e.peer("127.0.0.1"), e.peer("127.0.0.2")

	// The user's terminal, attached before the attack.
	term, status := user.dial(termPath, bearerHeader(tokAll))
	if status != http.StatusSwitchingProtocols {
		t.Fatalf("user attach: %d", status)
	}
	term.event("attached")

	// A browser on the attacker's address (behind the same NAT, say) that
	// logged in before.
	lh := formHeader.Clone()
	lh.Set("Origin", e.base)
	status, rh, body := attacker.do("POST", "/api/login", lh, "token="+tokWeb)
	login := (&http.Response{Header: rh}).Cookies()
	if status != http.StatusOK || len(login) != 1 {
		t.Fatalf("login before the attack: %d %s", status, body)
	}

	// Ten wrong tokens by every route that checks one: bearer headers on
	// the API and on WebSocket handshakes, the login form and header.
	// Malformed headers and made-up cookies cost nothing.
	for range 5 {
		if s, _, _ := attacker.do("GET", "/api/sessions", http.Header{"Authorization": {"Basic Z3Vlc3M="}}, ""); s != http.StatusUnauthorized {
			t.Fatalf("malformed header: %d", s)
		}
		if s, _, _ := attacker.do("GET", "/metrics", http.Header{"Cookie": {cookieName + "=guess"}}, ""); s != http.StatusUnauthorized {
			t.Fatalf("made-up cookie: %d", s)
		}
	}
	attempts := []func() int{
		func() int { s, _, _ := attacker.do("GET", "/api/sessions", bearerHeader("guess-1"), ""); return s },
		func() int { s, _, _ := attacker.do("GET", "/api/sessions", bearerHeader("guess-2"), ""); return s },
		func() int { s, _, _ := attacker.do("GET", "/metrics", bearerHeader("guess-10"), ""); return s },
		func() int { s, _, _ := attacker.do("GET", "/metrics", bearerHeader("guess-11"), ""); return s },
		func() int { s, _, _ := attacker.do("POST", "/api/login", formHeader, "token=guess-3"); return s },
		func() int { s, _, _ := attacker.do("POST", "/api/login", bearerHeader("guess-4"), ""); return s },
		func() int {
			s, _, _ := attacker.do("POST", "/api/instances/web1/terminal/reset", bearerHeader("guess-5"), "")
			return s
		},
		func() int { _, s := attacker.dial(termPath, bearerHeader("guess-6")); return s },
		func() int { _, s := attacker.dial(termPath, bearerHeader("guess-7")); return s },
		func() int { s, _, _ := attacker.do("GET", "/readyz", bearerHeader("guess-8"), ""); return s },
	}
	for i, try := range attempts {
		if s := try(); s != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d, want 401", i+1, s)
		}
	}
	// The 11th attempt, whatever it carries, is refused unchecked.
	for _, h := range []http.Header{bearerHeader("guess-9"), bearerHeader(tokAll)} {
		s, rh, body := attacker.do("GET", "/api/sessions", h, "")
		if s != http.StatusTooManyRequests {
			t.Fatalf("after 10 failures: %d %s, want 429", s, body)
		}
		if ra, err := strconv.Atoi(rh.Get("Retry-After")); err != nil || ra < 1 || ra > 30 {
			t.Errorf("Retry-After %q", rh.Get("Retry-After"))
		}
	}
	if s, _, _ := attacker.do("POST", "/api/login", formHeader, "token="+tokAll); s != http.StatusTooManyRequests {
		t.Errorf("login while locked out: %d, want 429", s)
	}
	if _, s := attacker.dial(termPath, bearerHeader(tokAll)); s != http.StatusTooManyRequests {
		t.Errorf("attach while locked out: %d, want 429", s)
	}
	// Requests without a credential are not held up: the page still loads;
	// and the browser that logged in before still works.
	for _, path := range []string{"/", "/healthz"} {
		if s, _, _ := attacker.do("GET", path, nil, ""); s != http.StatusOK {
			t.Errorf("GET %s while locked out: %d", path, s)
		}
	}
	if s, _, body := attacker.do("GET", "/api/sessions", withCookie(login[0], ""), ""); s != http.StatusOK {
		t.Errorf("a login cookie from the locked-out address: %d %s", s, body)
	}
	if w, s := attacker.dial(termPath, withCookie(login[0], e.base)); s != http.StatusSwitchingProtocols {
		t.Errorf("attach by login cookie from the locked-out address: %d", s)
	} else {
		w.event("attached")
		w.hangUp()
	}

	// The user, on another address, is unaffected.
	if s, _, body := user.do("GET", "/api/sessions", bearerHeader(tokAll), ""); s != http.StatusOK {
		t.Fatalf("user while the attacker is locked out: %d %s", s, body)
	}
	h := formHeader.Clone()
	h.Set("Origin", e.base)
	if s, _, body := user.do("POST", "/api/login", h, "token="+tokAll); s != http.StatusOK {
		t.Fatalf("user login: %d %s", s, body)
	}
	term2, status := user.dial(termPath, bearerHeader(tokAll))
	if status != http.StatusSwitchingProtocols {
		t.Fatalf("user's second attach: %d", status)
	}
	term2.event("attached")
	mark := term.out.Len()
	term.input("still here\n")
	term.output(mark, regexp.MustCompile(`still here`))

	// One more attempt after AuthFailureEvery.
	clock.advance(30 * time.Second)
	if s, _, body := attacker.do("GET", "/api/sessions", bearerHeader(tokAll), ""); s != http.StatusOK {
		t.Fatalf("after the allowance refilled: %d %s", s, body)
	}

	var failures, lockouts int
	for _, ev := range auditLines(t, &auditBuf) {
		if ev["event"] != audit.AuthFailure || ev["reason"] != "invalid token" {
			continue
		}
		failures++
		if ev["locked_out"] == true {
			lockouts++
			if !strings.HasPrefix(ev["remote"].(string), "127.0.0.1:") {
				t.Errorf("lock-out of %v", ev["remote"])
			}
		}
	}
	if failures != 10 || lockouts != 1 {
		t.Errorf("audit: %d wrong tokens, %d lock-outs; want 10 and 1 (the 429s are not audited one by one)", failures, lockouts)
	}
}

// A page on another site cannot spend a user's failure allowance: requests
// with a foreign Origin are refused before their credential is looked at.
func TestForeignOriginFailuresDoNotLockOut(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.AuthFailures = 3 })
	victim := e.peer("127.0.0.1")
	evil := http.Header{"Origin": {"https://evil.example"}, "Cookie": {cookieName + "=expired-or-made-up"}}
	for range 10 {
		if _, s := victim.dial(termPath, evil); s != http.StatusForbidden {
			t.Fatalf("cross-site handshake: %d, want 403", s)
		}
		h := formHeader.Clone()
		h.Set("Origin", "https://evil.example")
		if s, _, _ := victim.do("POST", "/api/login", h, "token=guess"); s != http.StatusForbidden {
			t.Fatalf("cross-site login: %d, want 403", s)
		}
	}
	if s, _, body := victim.do("GET", "/api/sessions", bearerHeader(tokAll), ""); s != http.StatusOK {
		t.Fatalf("victim after the cross-site attempts: %d %s", s, body)
	}
}

// A flood from one address gets 429 once its burst is spent; another
// address and an attached terminal are unaffected; WebSocket frames are not
// requests and are not limited.
func TestRequestRateLimit(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) {
		c.RequestRate, c.RequestBurst = 2, 5
	})
	e.srv.requests.now = clock.Now
	flood, other := e.peer("127.0.0.1"), e.peer("127.0.0.2")

	term, status := other.dial(termPath, bearerHeader(tokAll)) // one request of other's 5
	if status != http.StatusSwitchingProtocols {
		t.Fatalf("attach: %d", status)
	}
	term.event("attached")

	for i := range 5 {
		if s, _, _ := flood.do("GET", "/healthz", nil, ""); s != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, s)
		}
	}
	s, h, body := flood.do("GET", "/healthz", nil, "")
	if s != http.StatusTooManyRequests || h.Get("Retry-After") != "1" {
		t.Fatalf("6th request: %d Retry-After %q %s", s, h.Get("Retry-After"), body)
	}
	if h.Get("Content-Security-Policy") == "" {
		t.Error("a 429 without the security headers")
	}
	for i := range 4 {
		if s, _, _ := other.do("GET", "/api/sessions", bearerHeader(tokAll), ""); s != http.StatusOK {
			t.Fatalf("other address, request %d: %d", i+1, s)
		}
	}
	for i := range 50 { // frames on an attached terminal are not requests
		mark := term.out.Len()
		term.input("frame " + strconv.Itoa(i) + "\n")
		term.output(mark, regexp.MustCompile(`frame `+strconv.Itoa(i)+`\n`))
	}
	clock.advance(500 * time.Millisecond) // one token at 2/s
	if s, _, _ := flood.do("GET", "/healthz", nil, ""); s != http.StatusOK {
		t.Fatalf("after the bucket refilled one: %d", s)
	}
	if s, _, _ := flood.do("GET", "/healthz", nil, ""); s != http.StatusTooManyRequests {
		t.Fatalf("and only one: %d", s)
	}
}

func TestLimitDefaultsAndOff(t *testing.T) {
	e := newEnv(t, newFakeBackend(), nil, func(c *Config) { c.RequestRate, c.AuthFailures = 0, 0 })
	if e.srv.requests == nil || e.srv.requests.burst != 100 || e.srv.requests.every != 20 || e.srv.failures == nil {
		t.Fatalf("defaults: %+v %+v", e.srv.requests, e.srv.failures)
	}
	off := newEnv(t, newFakeBackend(), nil, nil) // newEnv turns both off
	if off.srv.requests != nil || off.srv.failures != nil {
		t.Fatal("negative values did not turn the limits off")
	}
}

func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"192.0.2.1:1234", "192.0.2.1/32"},
		{"192.0.2.1", "192.0.2.1/32"},
		{"[::ffff:192.0.2.1]:80", "192.0.2.1/32"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:22", "fe80::/64"},
		{"[::1]:8080", "::/64"},
		{"", "invalid Prefix"},
		{"@", "invalid Prefix"},
		{"host.example:80", "invalid Prefix"},
	} {
		if got := clientKey(tc.in).String(); got != tc.want {
			t.Errorf("clientKey(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if clientKey("[2001:db8:1:3::1]:1") == clientKey("[2001:db8:1:2::1]:1") {
		t.Error("two /64s share a bucket")
	}
}

// An attacker spraying addresses cannot grow the table without bound.
func TestAddrLimiterIsBounded(t *testing.T) {
	clock := newFakeClock()
	l := newAddrLimiter(1, 3, clock.Now)
	l.max = 64
	locked := netip.MustParsePrefix("192.0.2.1/32")
	for range 3 {
		l.take(locked)
	}
	if b, _ := l.blocked(locked); !b {
		t.Fatal("three failures did not block")
	}
	for i := range 10_000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		l.take(netip.PrefixFrom(a, 32))
		if len(l.m) > l.max {
			t.Fatalf("%d buckets, bound %d", len(l.m), l.max)
		}
	}
	clock.advance(time.Hour)
	if b, _ := l.blocked(locked); b {
		t.Error("still blocked an hour later")
	}
}

// X-Forwarded-For and friends do not change the address a limit applies
// to: rotating them does not buy more attempts.
func TestForwardedForIsIgnored(t *testing.T) {
	e := newEnv(t, newFakeBackend("web1"), nil, func(c *Config) { c.AuthFailures = 2 })
	p := e.peer("127.0.0.1")
	for i := range 5 {
		h := bearerHeader("guess")
		h.Set("X-Forwarded-For", "198.51.100."+strconv.Itoa(i))
		h.Set("X-Real-IP", "198.51.100."+strconv.Itoa(i))
		h.Set("Forwarded", "for=198.51.100."+strconv.Itoa(i))
		s, _, _ := p.do("GET", "/api/sessions", h, "")
		if want := map[bool]int{true: 401, false: 429}[i < 2]; s != want {
			t.Fatalf("attempt %d with a fresh X-Forwarded-For: %d, want %d", i+1, s, want)
		}
	}
}
