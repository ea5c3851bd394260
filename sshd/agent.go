package sshd

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/internal/agentwire"
	"github.com/termgate/termgate/remote"
	"github.com/termgate/termgate/sessions"
)

// Agent forwarding that follows the person (contract, "Agent
// forwarding"). A session whose first attach offered an agent (ssh -A) has
// SSH_AUTH_SOCK fixed at its start (sessions.AgentSocket); the socket is
// served in the instance by the holder's agent tool, whose stream comes
// here. Every request on it is answered from the agent of the most recent
// read-write client attached to that session that offered one, through an
// auth-agent@openssh.com channel on that client's connection, opened per
// request; with none, the agent protocol's failure at once. Which client
// answers is sshd's business: the registry knows nothing of agents.
//
// A one-off command (ssh -A INSTANCE@HOST CMD) gets a socket of its own,
// answered by its own client only, for the command's life.
//
// The instance may list keys and ask for signatures (each an audit
// record), never add, remove or lock keys: the other agent requests are
// answered with the failure without reaching the client.
//
// Goroutines: per socket, serve (tracked: the helper's start, then its
// stream's reads) and its end watcher (tracked), and one per request in
// flight (at most agentParallel, waited for by serve). Locks:
// agentBroker.mu guards the map and each socket's sources, never held
// across I/O; agentSocket.wmu serializes the replies written to its
// stream.

// Agent protocol message numbers (draft-miller-ssh-agent).
const (
	agentRequestIDs    = 11
	agentSignRequest   = 13
	agentSignResponse  = 14
	agentExtension     = 27
	agentParallel      = 4                // requests of one socket answered at once
	agentTimeout       = 60 * time.Second // a client's agent may ask its user to confirm
	agentChannelType   = "auth-agent@openssh.com"
	commandAgentPrefix = "cmd-"
	// agentMaxSources bounds the clients remembered per socket.
	agentMaxSources = 64
)

// agentBroker holds the agent sockets this gateway serves, by session id
// (or a command's own id).
type agentBroker struct {
	srv *Server

	mu      sync.Mutex
	sockets map[string]*agentSocket
	closed  bool
}

// agentSocket is one socket in an instance and the clients that may
// answer for it.
type agentSocket struct {
	id      string          // the session's id, or a command's own
	session string          // the session, for the audit trail ("" for a command)
	inst    string          // the instance's name, for the audit trail
	login   string          // the instance user whose socket it is ("" the default)
	done    <-chan struct{} // the session's end (nil for a command's)
	ctx     context.Context
	cancel  context.CancelFunc
	sources []*agentSource // guarded by agentBroker.mu; the last one answers

	wmu sync.Mutex // serializes the replies written to the stream
}

// agentSource is a client that offered its agent.
type agentSource struct {
	conn gossh.Conn
	who  audit.Who
}

func newAgentBroker(s *Server) *agentBroker {
	return &agentBroker{srv: s, sockets: map[string]*agentSocket{}}
}

// backend is the backend's agent helper, nil when it has none.
func (b *agentBroker) backend() remote.Agent {
	ag, _ := b.srv.cfg.Remote.(remote.Agent)
	return ag
}

// close ends every socket (Shutdown, Close).
func (b *agentBroker) close() {
	b.mu.Lock()
	b.closed = true
	for _, so := range b.sockets {
		so.cancel()
	}
	b.mu.Unlock()
}

// join makes src answer for the agent socket of the session id in
// instance inst, run as login, starting its helper when none runs, until
// leave; the socket ends with the session (done).
func (b *agentBroker) join(id, inst, login string, done <-chan struct{}, src *agentSource) (leave func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return func() {}
	}
	so := b.sockets[id]
	if so != nil && (so.done != done || so.login != login || so.ctx.Err() != nil) {
		// Ending, or another session's of the same id (a held session's
		// reset keeps its id): a fresh one takes its place; the old
		// helper leaves the new one's socket alone.
		so.cancel()
		so = nil
	}
	if so == nil {
		so = &agentSocket{id: id, session: id, inst: inst, login: login, done: done}
		so.ctx, so.cancel = context.WithCancel(context.Background())
		b.sockets[id] = so
		b.srv.track.Go(func() {
			select {
			case <-done:
				so.cancel()
			case <-so.ctx.Done():
			}
		})
		b.srv.track.Go(func() { b.serve(so, nil) })
	}
	if len(so.sources) >= agentMaxSources {
		so.sources = so.sources[1:] // the oldest would never answer again anyway
	}
	so.sources = append(so.sources, src)
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for i, s := range so.sources {
			if s == src {
				so.sources = append(so.sources[:i], so.sources[i+1:]...)
				break
			}
		}
	}
}

// forCommand starts a socket of its own for a one-off command in inst run
// as login, answered by src only, and returns its path for SSH_AUTH_SOCK;
// stop ends it.
func (b *agentBroker) forCommand(ctx context.Context, inst sessions.Instance, login string, src *agentSource) (sock string, stop func(), err error) {
	ag := b.backend()
	if ag == nil {
		return "", nil, remote.ErrUnsupported
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	id := commandAgentPrefix + hex.EncodeToString(r[:])
	so := &agentSocket{id: id, inst: inst.Name, login: login, sources: []*agentSource{src}}
	// ctx (the connection's) bounds the socket's life, stop ends it
	// sooner; the helper's stream ends with so.ctx.
	so.ctx, so.cancel = context.WithCancel(ctx)
	conn, err := ag.Agent(so.ctx, inst, id, login)
	if err != nil {
		so.cancel()
		return "", nil, err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		so.cancel()
		_ = conn.Close()
		return "", nil, errors.New("the gateway is shutting down")
	}
	b.sockets[id] = so
	b.mu.Unlock()
	served := make(chan struct{})
	b.srv.track.Go(func() {
		defer close(served)
		b.serve(so, conn)
	})
	return sessions.AgentSocket(id), func() {
		so.cancel()
		_ = conn.Close() // unblocks serve's read
		<-served
	}, nil
}

// serve starts the socket's helper (unless conn is given) and answers its
// requests until the stream or the socket ends.
func (b *agentBroker) serve(so *agentSocket, conn remote.Conn) {
	defer func() {
		so.cancel()
		b.mu.Lock()
		if b.sockets[so.id] == so {
			delete(b.sockets, so.id)
		}
		b.mu.Unlock()
	}()
	log := b.srv.log.With("instance", so.inst, "session", sessions.ShortID(so.session))
	if conn == nil {
		ag := b.backend()
		if ag == nil {
			return
		}
		inst, err := b.srv.cfg.Registry.Lookup(so.ctx, so.inst)
		if err == nil {
			// so.ctx bounds the stream's life: its end closes it.
			conn, err = ag.Agent(so.ctx, inst, so.id, so.login)
		}
		if err != nil {
			if so.ctx.Err() == nil {
				log.Warn("agent forwarding: could not start the agent socket in the instance; ssh -A is without an agent there until the next attach", "err", err)
			}
			return
		}
	}
	defer conn.Close()
	log.Debug("agent socket serving", "socket", sessions.AgentSocket(so.id))
	sem := make(chan struct{}, agentParallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	r := bufio.NewReaderSize(conn, 64<<10)
	for {
		req, err := agentwire.ReadRequest(r)
		if err != nil {
			if so.ctx.Err() == nil && !errors.Is(err, io.EOF) {
				log.Info("agent forwarding: the agent socket's stream ended", "err", err)
			}
			return
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			reply := b.answer(so, req)
			so.wmu.Lock()
			_ = agentwire.WriteReply(conn, agentwire.Reply{Conn: req.Conn, Msg: reply})
			so.wmu.Unlock()
		}()
	}
}

// current is the client that answers for so now, nil when none.
func (b *agentBroker) current(so *agentSocket) *agentSource {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(so.sources); n > 0 {
		return so.sources[n-1]
	}
	return nil
}

// answer is the reply to one request: the current client's agent's, or
// the failure (no client, a request the instance may not make, an agent
// that did not answer). Signatures are audited.
func (b *agentBroker) answer(so *agentSocket, req agentwire.Request) []byte {
	fail := agentwire.Failure[4:]
	if len(req.Msg) == 0 {
		return fail
	}
	switch req.Msg[0] {
	case agentRequestIDs, agentSignRequest, agentExtension:
	default: // adding, removing, locking keys: never from an instance
		return fail
	}
	src := b.current(so)
	if src == nil {
		return fail
	}
	reply, err := askAgent(so.ctx, src.conn, req.Msg)
	if req.Msg[0] == agentSignRequest {
		result := "ok"
		switch {
		case err != nil:
			result = "failed"
		case len(reply) == 0 || reply[0] != agentSignResponse:
			result = "refused"
		}
		detail := []any{"key_fingerprint", signedKey(req.Msg), "result", result}
		if req.PID != 0 {
			detail = append(detail, "pid", req.PID, "process", clip(strings.ToValidUTF8(req.Comm, "?"), agentwire.MaxComm))
		}
		if so.session == "" {
			detail = append(detail, "command", true)
		}
		b.srv.cfg.Audit.Event(audit.Agent, src.who, so.inst, so.session, detail...)
	}
	if err != nil {
		return fail
	}
	return reply
}

// askAgent sends one message to the client's agent on a channel of its
// own and returns the reply's body, within agentTimeout.
func askAgent(ctx context.Context, conn gossh.Conn, msg []byte) ([]byte, error) {
	ch, reqs, err := conn.OpenChannel(agentChannelType, nil)
	if err != nil {
		return nil, fmt.Errorf("open the agent channel: %w", err)
	}
	// Ends once the channel is gone: x/crypto closes reqs with it.
	go gossh.DiscardRequests(reqs)
	defer ch.Close()
	ctx, cancel := context.WithTimeout(ctx, agentTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = ch.Close() })
	defer stop()
	if err := agentwire.WriteMessage(ch, msg); err != nil {
		return nil, err
	}
	return agentwire.ReadMessage(ch)
}

// signedKey is the SHA256 fingerprint of the key a sign request names, or
// "unknown".
func signedKey(msg []byte) string {
	if len(msg) < 5 {
		return "unknown"
	}
	n := binary.BigEndian.Uint32(msg[1:5])
	if uint64(n) > uint64(len(msg)-5) {
		return "unknown"
	}
	k, err := gossh.ParsePublicKey(msg[5 : 5+n])
	if err != nil {
		return "unknown"
	}
	return gossh.FingerprintSHA256(k)
}
