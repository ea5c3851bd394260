package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/termgate/termgate/holder"
	"github.com/termgate/termgate/internal/agentwire"
)

// termgate-holder agent [--install-as PATH] [--login LOGIN] SOCKET
//
// serves the forwarded agent of a session (ssh -A) at SOCKET inside the
// instance, the path its shell's SSH_AUTH_SOCK names: every request of
// every local connection goes to the gateway on stdout (agentwire
// frames, with the requesting process when SO_PEERCRED tells it), and the
// gateway's answer, read from stdin, goes back to that connection. The
// gateway answers from the agent of the client it chose, or with the
// agent protocol's failure when there is none: this helper never decides
// anything and holds no key. It ends when stdin does (the gateway let go
// of the session or went away), removing the socket it made.
//
// The socket's directory is private: created 0700 by this user, or, when
// it exists, used only if it is a real directory of this user that no one
// else may enter (a directory planted by another user of the instance is
// refused, as OpenSSH's sshd refuses its own). The socket is 0600.
//
// With --login (a session or command run as the instance's user LOGIN)
// it becomes LOGIN before it makes anything, as sftp --login does, so
// that the directory and the socket are LOGIN's, whose shell could not
// reach a root's 0600 socket in a 0700 directory; the checks above are
// then against LOGIN.

// maxAgentConns bounds the connections served at once; more are closed
// at once (a process flooding the socket gets nothing but closed
// connections).
const maxAgentConns = 64

// agentCmd is "agent [--login LOGIN] SOCKET".
func agentCmd(args []string, in io.Reader, out io.Writer) error {
	login := ""
	if len(args) == 3 && args[0] == "--login" {
		login, args = args[1], args[2:]
	}
	if len(args) != 1 {
		usage()
	}
	sock := args[0]
	if login != "" {
		if err := cleanSocketPath(sock); err != nil {
			return err
		}
		// /tmp, when an image has none, is made while still root:
		// LOGIN could not.
		if err := ensureParent(filepath.Dir(filepath.Dir(sock))); err != nil {
			return err
		}
		if _, err := becomeLogin(login); err != nil {
			return fmt.Errorf("agent forwarding: %w", err)
		}
	}
	return agentSocket(sock, in, out)
}

// cleanSocketPath refuses a socket path that is not clean and absolute.
func cleanSocketPath(sock string) error {
	if !filepath.IsAbs(sock) || filepath.Clean(sock) != sock {
		return fmt.Errorf("agent socket %q: want a clean absolute path", sock)
	}
	return nil
}

// agentSocket serves sock until in ends.
func agentSocket(sock string, in io.Reader, out io.Writer) error {
	ln, cleanup, err := listenAgent(sock)
	if err != nil {
		return err
	}
	defer cleanup()
	if _, err := io.WriteString(out, holder.ToolReady+"\n"); err != nil {
		return err
	}
	s := &agentServer{out: out, waiting: map[uint32]chan []byte{}, conns: map[net.Conn]struct{}{}}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		s.accept(ln)
	}()
	err = s.replies(bufio.NewReaderSize(in, 64<<10))
	_ = ln.Close()
	<-accepted
	s.closeAll()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// agentServer carries the socket's requests to the gateway.
type agentServer struct {
	wmu sync.Mutex // serializes the frames written to out (a pipe write; nothing else is held)
	out io.Writer

	mu      sync.Mutex // guards the fields below; never held across I/O
	next    uint32
	waiting map[uint32]chan []byte // a connection's request in flight: where its reply goes
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// accept serves each connection on a goroutine of its own until ln is
// closed.
func (s *agentServer) accept(ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed || len(s.conns) >= maxAgentConns {
			s.mu.Unlock()
			_ = c.Close()
			continue
		}
		s.next++
		id := s.next
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serve(c, id)
		}()
	}
}

// serve passes one connection's requests on, one at a time, as the agent
// protocol has them: request, reply, request.
func (s *agentServer) serve(c *net.UnixConn, id uint32) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		delete(s.waiting, id)
		s.mu.Unlock()
		_ = c.Close()
	}()
	pid, comm := peerOf(c)
	for {
		msg, err := agentwire.ReadMessage(c)
		if err != nil {
			return
		}
		reply := make(chan []byte, 1)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		s.waiting[id] = reply
		s.mu.Unlock()
		s.wmu.Lock()
		err = agentwire.WriteRequest(s.out, agentwire.Request{Conn: id, PID: pid, Comm: comm, Msg: msg})
		s.wmu.Unlock()
		if err != nil {
			return
		}
		body, ok := <-reply // closeAll closes it when the gateway is gone
		if !ok || agentwire.WriteMessage(c, body) != nil {
			return
		}
	}
}

// replies hands each of the gateway's replies to its connection until in
// ends.
func (s *agentServer) replies(in io.Reader) error {
	for {
		r, err := agentwire.ReadReply(in)
		if err != nil {
			return err
		}
		s.mu.Lock()
		ch := s.waiting[r.Conn]
		delete(s.waiting, r.Conn)
		s.mu.Unlock()
		if ch != nil {
			ch <- r.Msg
		}
	}
}

// closeAll ends every connection and waits for their goroutines.
func (s *agentServer) closeAll() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	for id, ch := range s.waiting {
		close(ch)
		delete(s.waiting, id)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// peerOf is the connecting process (SO_PEERCRED) and its name, when the
// kernel tells them (0, "" otherwise).
func peerOf(c *net.UnixConn) (uint32, string) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, ""
	}
	var cred *syscall.Ucred
	_ = raw.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if err != nil || cred == nil || cred.Pid <= 0 {
		return 0, ""
	}
	return uint32(cred.Pid), procComm(int(cred.Pid))
}

// procComm is /proc/PID/comm, bounded.
func procComm(pid int) string {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, agentwire.MaxComm)
	n, _ := io.ReadFull(f, b)
	return strings.TrimSpace(string(b[:n]))
}

// listenAgent makes sock's private directory and listens on sock; cleanup
// closes the listener and removes the socket and the directory, unless
// another helper has since put its own socket there.
func listenAgent(sock string) (*net.UnixListener, func(), error) {
	if err := cleanSocketPath(sock); err != nil {
		return nil, nil, err
	}
	dir := filepath.Dir(sock)
	if err := ensureParent(filepath.Dir(dir)); err != nil {
		return nil, nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, nil, fmt.Errorf("agent socket directory: %w", err)
	}
	if err := privateDir(dir); err != nil {
		return nil, nil, err
	}
	if fi, err := os.Lstat(sock); err == nil { // a helper before this one left it
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, nil, fmt.Errorf("agent socket %s: something that is not a socket is there", sock)
		}
		if err := os.Remove(sock); err != nil {
			return nil, nil, fmt.Errorf("agent socket: removing the old one: %w", err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, nil, fmt.Errorf("agent socket: %w", err)
	}
	ln.SetUnlinkOnClose(false) // cleanup removes it only if it is still this one's
	mine, err := os.Lstat(sock)
	if err == nil {
		err = os.Chmod(sock, 0o600)
	}
	if err != nil {
		_ = ln.Close()
		return nil, nil, fmt.Errorf("agent socket: %w", err)
	}
	return ln, func() {
		_ = ln.Close()
		if now, err := os.Lstat(sock); err == nil && os.SameFile(now, mine) {
			_ = os.Remove(sock)
			_ = os.Remove(dir) // only if empty: another helper's socket keeps it
		}
	}, nil
}

// privateDir checks that dir is a directory (not a link to one) of this
// user that nobody else may enter or list.
func privateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("agent socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("agent socket directory %s: not a directory; refusing it", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("agent socket directory %s: owned by another user; refusing it", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("agent socket directory %s: open to other users (%v); refusing it", dir, fi.Mode().Perm())
	}
	return nil
}

// ensureParent makes the socket directory's parent (/tmp) when an image
// has none: world-writable and sticky, as /tmp is everywhere else.
func ensureParent(parent string) error {
	if _, err := os.Stat(parent); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("agent socket: %s is missing and cannot be made: %w", parent, err)
	}
	return os.Chmod(parent, 0o1777)
}
