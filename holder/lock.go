package holder

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockSocket takes the exclusive lock on path (created 0600), without
// waiting: ErrAlreadyHeld when a live holder has it. The kernel drops the
// lock when its holder dies, however it dies, so a stale lock never blocks
// the next holder.
func lockSocket(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("holder: open the lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrAlreadyHeld
		}
		return nil, fmt.Errorf("holder: lock %s: %w", path, err)
	}
	return f, nil
}
