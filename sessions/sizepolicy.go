package sessions

import (
	"fmt"
	"sync/atomic"
)

// SizePolicy decides the shell's window size from the sizes of the
// read-write clients attached (contract, session semantics 4). Observers
// never count, nor do clients whose size is unknown (ssh -tt's 0x0). With
// no client that counts, the size stays as it was.
type SizePolicy int

const (
	// SizeLatest: the size of the read-write client that most recently
	// attached, resized or typed; when it leaves, the most recent one
	// still attached (tmux's "latest", with its fall-back).
	SizeLatest SizePolicy = iota
	// SizeSmallest: the smallest columns and rows of any of them, so every
	// client sees the whole screen (zellij's).
	SizeSmallest
	// SizeLargest: the largest columns and rows of any of them.
	SizeLargest
)

// ParseSizePolicy reads the --size-policy flag.
func ParseSizePolicy(s string) (SizePolicy, error) {
	switch s {
	case "latest", "":
		return SizeLatest, nil
	case "smallest":
		return SizeSmallest, nil
	case "largest":
		return SizeLargest, nil
	}
	return 0, fmt.Errorf("size policy %q: use latest, smallest or largest", s)
}

func (p SizePolicy) String() string {
	switch p {
	case SizeSmallest:
		return "smallest"
	case SizeLargest:
		return "largest"
	}
	return "latest"
}

// activity numbers what clients do (attach, resize, type), across
// sessions, so a reset that moves clients keeps their order.
var activity atomic.Uint64

// Resized is an in-band event (Take returns it between the output before
// and after it): the shell's window size changed to Size for a reason
// other than this client's own request (another client's size, a pin, the
// fall-back when a client left), or it differs from what this client asked
// for. WebSocket: a {"type":"size"} event; SSH ignores it (a remote
// terminal cannot be resized). It is never sent for a client's own resize.
type Resized struct {
	Size Size
	// Pinned: the size is pinned (Registry.PinSize) and follows no client.
	Pinned bool
}

func (r *Resized) String() string {
	if r.Pinned {
		return fmt.Sprintf("window size pinned to %dx%d", r.Size.Cols, r.Size.Rows)
	}
	return fmt.Sprintf("window size is %dx%d", r.Size.Cols, r.Size.Rows)
}

// wantSizeLocked records what a read-write client asks for (size zero:
// keep its last request) and that it is now the most recently active, then
// applies the policy. Called with Session.mu held, after c is in clients.
func (s *Session) wantSizeLocked(c *Client, size Size) {
	if c.ReadOnly() {
		c.sizeWant = size // kept for a grant of write access; never applied
		return
	}
	if !size.IsZero() {
		c.sizeWant = size
		c.sizeShown = size // its own request: never echoed
	}
	c.active = activity.Add(1)
	s.applySizePolicyLocked(false)
}

// typedLocked marks c the most recently active client when the policy
// cares, before its input is queued: a size change it causes is applied
// before that input reaches the shell. Cheap when c already was the most
// recent. Called with Session.mu held.
func (s *Session) typedLocked(c *Client) {
	if c == nil || c.ReadOnly() || s.cfg.SizePolicy != SizeLatest || c.sizeWant.IsZero() {
		return
	}
	if _, ok := s.clients[c]; !ok || s.latestLocked() == c {
		return
	}
	c.active = activity.Add(1)
	s.applySizePolicyLocked(false)
}

// latestLocked is the read-write client with a known size that was most
// recently active, or nil.
func (s *Session) latestLocked() *Client {
	var latest *Client
	for c := range s.clients {
		if c.ReadOnly() || c.sizeWant.IsZero() {
			continue
		}
		if latest == nil || c.active > latest.active {
			latest = c
		}
	}
	return latest
}

// policySizeLocked is the size the policy picks; zero: no client counts.
func (s *Session) policySizeLocked() Size {
	if !s.pin.IsZero() {
		return s.pin
	}
	if s.cfg.SizePolicy == SizeLatest {
		if c := s.latestLocked(); c != nil {
			return c.sizeWant
		}
		return Size{}
	}
	var out Size
	for c := range s.clients {
		w := c.sizeWant
		if c.ReadOnly() || w.IsZero() {
			continue
		}
		if out.IsZero() {
			out = w
			continue
		}
		if s.cfg.SizePolicy == SizeSmallest {
			out = Size{Cols: min(out.Cols, w.Cols), Rows: min(out.Rows, w.Rows)}
		} else {
			out = Size{Cols: max(out.Cols, w.Cols), Rows: max(out.Rows, w.Rows)}
		}
	}
	return out
}

// applySizePolicyLocked sets the shell's size from the policy and tells
// every client whose idea of it is now wrong. Called with Session.mu held
// whenever a client attaches, leaves, resizes or (latest) types, and when
// the pin changes (all: tell every client, for the pin's sake).
func (s *Session) applySizePolicyLocked(all bool) {
	size := s.policySizeLocked()
	if size.IsZero() {
		size = s.size // nobody counts: the size stays
	}
	s.setSizeLocked(size)
	for c := range s.clients {
		if c.sizeShown == size && !all {
			continue
		}
		c.sizeShown = size
		c.notifyEvent(&Resized{Size: size, Pinned: !s.pin.IsZero()})
	}
}

// SizeInfo is a session's window size and where it comes from.
type SizeInfo struct {
	Size   Size
	Pinned bool
	Policy SizePolicy
}

// sizeInfo reports the current size.
func (s *Session) sizeInfo() SizeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SizeInfo{Size: s.size, Pinned: !s.pin.IsZero(), Policy: s.cfg.SizePolicy}
}

// pinSize fixes the window size (zero: back to the policy).
func (s *Session) pinSize(size Size) error {
	if !size.IsZero() && !size.Valid() {
		return ErrBadSize
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateRunning {
		return errSessionClosing
	}
	s.pin = size
	s.applySizePolicyLocked(true) // every page learns the pin, or its end
	s.publishLocked()             // size_pinned, even when the size stays
	return nil
}

// setAttachSize records the size the client joined at. Called with
// Session.mu held.
func (c *Client) setAttachSize(size Size) {
	c.mu.Lock()
	c.info.Size = size
	c.mu.Unlock()
}

// PinSize pins the window size of the client's session (zero: unpin, the
// policy applies again); an observer may not (ErrReadOnly).
func (c *Client) PinSize(size Size) error {
	if c.who.ReadOnly {
		return ErrReadOnly
	}
	s, _ := c.session()
	return s.pinSize(size)
}
