package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNoSession: the instance runs but has no session (nothing to size).
var ErrNoSession = errors.New("no session")

// ErrNothingToWatch refuses a read-only attach where there is no session:
// an observer watches a session, it never starts one (issue 39 item 4).
var ErrNothingToWatch = fmt.Errorf("%w to watch", ErrNoSession)

// NothingToWatchMessage is the user-facing text for ErrNothingToWatch.
func NothingToWatchMessage(addr string) string {
	return fmt.Sprintf("no session yet in %s: a read-only credential watches a session and does not start one; it can watch once someone with write access attaches", addr)
}

// NoSessionMessage is the user-facing text for ErrNoSession; addr is
// INSTANCE or INSTANCE+NAME.
func NoSessionMessage(addr string) string {
	if inst, name, ok := strings.Cut(addr, "+"); ok {
		return fmt.Sprintf("instance %q has no session %q; attach first (ssh -t %s@HOST)", inst, name, addr)
	}
	return fmt.Sprintf("instance %q has no session; attach first (ssh -t %s@HOST)", addr, addr)
}

// Size reports the window size of the instance's session.
func (r *Registry) Size(ctx context.Context, name string) (SizeInfo, error) {
	s, err := r.sessionOf(ctx, name)
	if err != nil {
		return SizeInfo{}, err
	}
	return s.sizeInfo(), nil
}

// PinSize fixes the window size of the instance's session (ssh HOST size
// INSTANCE COLSxROWS), whatever its clients' sizes; a zero size unpins it
// (auto): the policy applies again. The pin lasts for that session: a
// reset's fresh session follows the policy.
func (r *Registry) PinSize(ctx context.Context, name string, size Size) (SizeInfo, error) {
	s, err := r.sessionOf(ctx, name)
	if err != nil {
		return SizeInfo{}, err
	}
	if err := s.pinSize(size); err != nil {
		if errors.Is(err, errSessionClosing) {
			return SizeInfo{}, ErrNoSession
		}
		return SizeInfo{}, err
	}
	s.log.Info("window size pinned", "size", size.String(), "auto", size.IsZero())
	return s.sizeInfo(), nil
}

// sessionOf is the running session at addr (INSTANCE or INSTANCE+NAME) of
// a running instance.
func (r *Registry) sessionOf(ctx context.Context, addr string) (*Session, error) {
	a, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	inst, err := r.Lookup(ctx, a.Instance)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	sl := r.slotLocked(slotKey{inst.ID, a.Name})
	r.mu.Unlock()
	if sl == nil || !sl.ended() || sl.sess == nil || sl.sess.closing() {
		return nil, ErrNoSession
	}
	return sl.sess, nil
}
