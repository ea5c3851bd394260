package e2e

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestCutUploadLeavesNothingInTheContainer: an HTTP PUT whose client goes
// away in the middle of the body (a killed curl, a partial body with a
// Content-Length) leaves neither its temporary file nor a changed target
// in the container, on an ordinary and a durable gateway (stress report
// round 4, D4: the removal ran on the request's cancelled context).
func TestCutUploadLeavesNothingInTheContainer(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			t.Parallel()
			o := options{containers: []string{"web-up"}}
			var g *gateway
			if durable {
				g = durableGateway(t, o).gateway
			} else {
				needHolder(t)
				g = newGateway(t, o)
			}
			inst := g.name("web-up")
			dockerExec(t, inst, "echo old > /tmp/app.conf")
			for _, length := range []string{"Content-Length: 4000000\r\n", "Transfer-Encoding: chunked\r\n"} {
				c, err := net.Dial("tcp", g.httpAddr)
				if err != nil {
					t.Fatal(err)
				}
				chunk := strings.Repeat("x", 64<<10)
				body := strings.Repeat(chunk, 16) // 1 MiB of the announced 4 MB
				if strings.HasPrefix(length, "Transfer") {
					body = strings.Repeat(fmt.Sprintf("%x\r\n%s\r\n", len(chunk), chunk), 16)
				}
				path := "/api/instances/" + url.PathEscape(inst) + "/files?path=" + url.QueryEscape("/tmp/app.conf")
				if _, err := fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\n%s", path, g.tokens[tokAdmin], length, body); err != nil {
					t.Fatal(err)
				}
				// The upload is under way in the container before the
				// client goes.
				waitUntil(t, "the upload's temporary file", func() bool {
					return strings.Contains(dockerExec(t, inst, "ls -a /tmp"), "termgate-upload")
				})
				_ = c.Close()
				waitUntil(t, "no temporary file left", func() bool {
					return !strings.Contains(dockerExec(t, inst, "ls -a /tmp"), "termgate-upload")
				})
				if got := dockerExec(t, inst, "cat /tmp/app.conf"); got != "old\n" {
					t.Errorf("%sthe target was changed to %q", length, got)
				}
			}
		})
	}
}

// waitUntil waits, at most waitFor, for cond.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
