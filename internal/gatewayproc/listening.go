package gatewayproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/termgate/termgate/internal/termtest"
)

// Addrs are the addresses a gateway's listening line names.
type Addrs struct {
	SSHAddr  string // host:port of the SSH listener
	HTTPAddr string // host:port of the HTTP (or HTTPS) listener
	URL      string // http://HTTPAddr, or https:// with --tls-cert
}

// listening matches the whole JSON line cmd/termgate's announce logs once
// both listeners are open (the trailing newline: a line not yet complete
// in the stream does not match).
var listening = regexp.MustCompile(`\{[^\n]*"msg":"termgate is listening"[^\n]*\n`)

// WaitListening waits for the listening line in log (a JSON log) and
// returns its addresses; it gives up when exited is closed or ctx ends.
func WaitListening(ctx context.Context, log *termtest.Stream, exited <-chan struct{}) (Addrs, error) {
	for {
		// WaitFor returns at the line's write; the bound is only how
		// often exited and ctx are looked at.
		if m, _ := log.WaitFor(listening, 0, 100*time.Millisecond); m != nil {
			return parseListening([]byte(m[0]))
		}
		select {
		case <-exited:
			return Addrs{}, errors.New("it exited before it listened")
		case <-ctx.Done():
			return Addrs{}, fmt.Errorf("no %q line in its JSON log (--log-format json, --log-level info or lower): %w", "termgate is listening", ctx.Err())
		default:
		}
	}
}

func parseListening(line []byte) (Addrs, error) {
	var rec struct{ SSH, HTTP, HTTPS string }
	if err := json.Unmarshal(line, &rec); err != nil {
		return Addrs{}, fmt.Errorf("listening line %q: %w", line, err)
	}
	a := Addrs{SSHAddr: rec.SSH, HTTPAddr: rec.HTTP, URL: "http://" + rec.HTTP}
	if rec.HTTPS != "" {
		a.HTTPAddr, a.URL = rec.HTTPS, "https://"+rec.HTTPS
	}
	if a.SSHAddr == "" || a.HTTPAddr == "" {
		return Addrs{}, fmt.Errorf("listening line %q names no SSH or HTTP address", line)
	}
	return a, nil
}
