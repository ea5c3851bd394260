package matrix

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// proxy stands between a gateway and its engine (the Docker socket, the
// Kubernetes API server): cut closes every connection through it and
// refuses new ones until restore, as an engine that went away does.
type proxy struct {
	ln   net.Listener
	dial func() (net.Conn, error)

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup // the accept loop and every copy
}

// startProxy listens on network/addr and forwards to what dial reaches.
// The test's cleanup stops it and waits for its goroutines.
func startProxy(t *testing.T, network, addr string, dial func() (net.Conn, error)) *proxy {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, dial: dial, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.closeAll()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			_ = c.Close()
			continue
		}
		up, err := p.dial()
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, up) {
			continue
		}
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// track registers both ends, unless a cut came in between.
func (p *proxy) track(c, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		_ = c.Close()
		_ = up.Close()
		return false
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	return true
}

// pipe copies from to to, passing a half-close on.
func (p *proxy) pipe(to, from net.Conn) {
	defer p.wg.Done()
	_, err := io.Copy(to, from)
	if cw, ok := to.(interface{ CloseWrite() error }); ok && err == nil {
		_ = cw.CloseWrite()
		return
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		_ = to.Close()
		_ = from.Close()
	}
}

// cutOff makes the engine unreachable: every connection through the
// proxy ends now and new ones are refused.
func (p *proxy) cutOff() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.closeAll()
}

// restore lets connections through again.
func (p *proxy) restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *proxy) closeAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}
