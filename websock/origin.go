package websock

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

var (
	errOriginMissing = errors.New("a browser request authenticated by cookie must carry an Origin header")
	errOriginRefused = errors.New("origin not allowed")
)

// origins decides which browser origins may use the API: the request's own
// origin and the configured extra ones. It is read-only after New.
type origins struct {
	allowed map[string]bool // normalized "scheme://host[:port]"
}

func newOrigins(list []string) (origins, error) {
	o := origins{allowed: map[string]bool{}}
	for _, s := range list {
		n, err := normalizeOrigin(s)
		if err != nil {
			return origins{}, fmt.Errorf("allowed origin %q: %w", s, err)
		}
		o.allowed[n] = true
	}
	return o, nil
}

// check applies the Origin rules to r: an Origin header, when present, must
// be r's own origin or an allowed one; with required (cookie
// authentication on an upgrade or a POST) it must be present.
func (o origins) check(r *http.Request, required bool) error {
	vals := r.Header.Values("Origin")
	if len(vals) == 0 {
		if required {
			return errOriginMissing
		}
		return nil
	}
	if len(vals) > 1 {
		return fmt.Errorf("%w: more than one Origin header", errOriginRefused)
	}
	got, err := normalizeOrigin(vals[0])
	if err != nil {
		return fmt.Errorf("%w: %q", errOriginRefused, truncateRunes(vals[0], 100))
	}
	if got == ownOrigin(r) || o.allowed[got] {
		return nil
	}
	return fmt.Errorf("%w: %q (allowed: this server's own origin and --allowed-origins)", errOriginRefused, got)
}

// ownOrigin is the origin a page served by this request's host would have;
// empty when the request names no host.
func ownOrigin(r *http.Request) string {
	if r.Host == "" {
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + normalizeHost(scheme, r.Host)
}

// normalizeOrigin turns an origin ("https://Example.com:443") into the form
// origins compares ("https://example.com"). Only http and https origins
// with a host and nothing after it are accepted ("null" is not).
func normalizeOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", errors.New("not a URL")
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return "", errors.New("scheme must be http or https")
	case u.Host == "" || u.User != nil || u.Opaque != "":
		return "", errors.New("must be scheme://host[:port]")
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", errors.New("must be scheme://host[:port] without a path")
	}
	host := normalizeHost(scheme, u.Host)
	if !originHost.MatchString(host) {
		return "", errors.New("the host must be a DNS name (ASCII, as browsers send it) or an IP address, with an optional port")
	}
	return scheme + "://" + host, nil
}

// originHost is what a browser's serialized origin can hold after the
// scheme, lower-cased: an ASCII host name (IDNs arrive as punycode) or an
// IPv4 or bracketed IPv6 address without a zone, and an optional port.
var originHost = regexp.MustCompile(`^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(:[0-9]{1,5})?$`)

// normalizeHost lower-cases host and drops the scheme's default port.
func normalizeHost(scheme, host string) string {
	host = strings.ToLower(host)
	if h, port, err := net.SplitHostPort(host); err == nil {
		if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
			if strings.Contains(h, ":") {
				return "[" + h + "]"
			}
			return h
		}
	}
	return host
}
