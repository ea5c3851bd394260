package sshd

import (
	"fmt"
	"net"
	"sync"

	gossh "golang.org/x/crypto/ssh"
)

// What runs beside sessions (remote.Runner): a command, an SFTP transfer
// or a forwarded connection. Each is an op from its start until it ended
// and its goroutines were waited for; remoteOps caps them per key and per
// instance and cuts them when their credentials are revoked.
const (
	opCommand  = "command"
	opTransfer = "transfer"
	opForward  = "forward"
)

// Default caps of Config.MaxRemotePerKey and MaxRemotePerInstance.
const (
	defaultMaxRemotePerKey      = 32
	defaultMaxRemotePerInstance = 64
)

// remoteOps is the table of running ops.
type remoteOps struct {
	mu      sync.Mutex // a leaf: guards the fields below, held for no I/O
	perKey  map[string]int
	perInst map[string]int
	ops     map[*remoteOp]struct{}
	closing bool // the gateway is shutting down: no new op (cut.go)
	// drained is closed once closing and no op runs (Drained); made on
	// first use, closed once (drainedShut).
	drained     chan struct{}
	drainedShut bool
}

// drainedLocked returns the drained channel, closing it once nothing
// runs after closing. Called with mu held.
func (r *remoteOps) drainedLocked() chan struct{} {
	if r.drained == nil {
		r.drained = make(chan struct{})
	}
	if r.closing && len(r.ops) == 0 && !r.drainedShut {
		r.drainedShut = true
		close(r.drained)
	}
	return r.drained
}

// Drained is closed once the gateway is shutting down and every command,
// transfer and forward it cut has ended, its client told why: only then
// may the connections be closed under them (cmd/termgate's shutdown).
func (s *Server) Drained() <-chan struct{} {
	s.remote.mu.Lock()
	defer s.remote.mu.Unlock()
	return s.remote.drainedLocked()
}

// remoteOp is one running op. cut ends it (closes its channel, its stream
// into the instance): on revocation, or with whyShutdown as the gateway
// shuts down (then, where the protocol can, the client is told before
// its channel closes); never under remoteOps.mu.
type remoteOp struct {
	kind     string
	key      gossh.PublicKey
	remote   net.Addr
	instance string
	cut      func(why string)
	capKey   string
	once     sync.Once
	s        *Server
}

// beginRemote admits an op of kind on instance for the connection's key,
// or says why not (what the client reads). cut is how Recheck ends it.
// The caller calls end once the op is over.
func (s *Server) beginRemote(cs *connState, kind, instance string, cut func(why string)) (*remoteOp, string) {
	key := cs.verifiedKey()
	if key == nil {
		return nil, "permission denied"
	}
	op := &remoteOp{kind: kind, key: key, remote: cs.remote, instance: instance, cut: cut, capKey: capKey(key), s: s}
	r := &s.remote
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return nil, "termgate: the " + whyShutdown
	}
	if max := s.cfg.MaxRemotePerKey; max > 0 && r.perKey[op.capKey] >= max {
		return nil, fmt.Sprintf("termgate: this key already runs %d commands, transfers and forwarded connections; end one and try again", max)
	}
	if max := s.cfg.MaxRemotePerInstance; max > 0 && r.perInst[instance] >= max {
		return nil, fmt.Sprintf("termgate: instance %q already runs %d commands, transfers and forwarded connections through the gateway; try again later", instance, max)
	}
	if r.ops == nil {
		r.perKey, r.perInst, r.ops = map[string]int{}, map[string]int{}, map[*remoteOp]struct{}{}
	}
	r.perKey[op.capKey]++
	r.perInst[instance]++
	r.ops[op] = struct{}{}
	return op, ""
}

// end releases the op's slots; idempotent.
func (op *remoteOp) end() {
	op.once.Do(func() {
		r := &op.s.remote
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.ops, op)
		if r.perKey[op.capKey]--; r.perKey[op.capKey] <= 0 {
			delete(r.perKey, op.capKey)
		}
		if r.perInst[op.instance]--; r.perInst[op.instance] <= 0 {
			delete(r.perInst, op.instance)
		}
		r.drainedLocked()
	})
}

// Recheck cuts every running op whose key is no longer authorized for its
// instance (as the registry's Recheck disconnects attached clients): the
// gateway calls both after every reload of keys and CAs.
func (s *Server) Recheck() {
	r := &s.remote
	r.mu.Lock()
	ops := make([]*remoteOp, 0, len(r.ops))
	for op := range r.ops {
		ops = append(ops, op)
	}
	r.mu.Unlock()
	for _, op := range ops {
		id, err := s.authorize(op.key, op.remote)
		switch {
		case err != nil:
			op.cut(errKeyRevoked.Error())
		case !id.May(op.instance):
			op.cut(errInstanceRevoked.Error())
		}
	}
}

// remoteRunning counts the running ops (tests).
func (s *Server) remoteRunning() int {
	s.remote.mu.Lock()
	defer s.remote.mu.Unlock()
	return len(s.remote.ops)
}
