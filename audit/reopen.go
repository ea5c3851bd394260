package audit

import (
	"fmt"
	"os"
	"sync"

	"github.com/termgate/termgate/internal/fileperm"
)

// file is the audit file Open opened, reopened by Reopen so that a
// rotation (logrotate renames the file, then sends SIGHUP) moves the
// records to the new file without a restart. Its lock is held across
// each record's one Write and across the swap in Reopen: a record is
// written whole into the old file or the new one, never into a closed
// one. A local file write is all it guards; nothing else is called
// under it.
type file struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// openFile appends to path, created 0600; an existing regular file must
// pass the permission check Open documents.
func openFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().IsRegular() {
		err = fileperm.Default().Info(path, fi, 0o026)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log refused: %w", err)
	}
	return f, nil
}

func (w *file) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Write(p)
}

func (w *file) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}

// reopen opens the path again and writes there from now on; on error the
// records keep going to the file open until now.
func (w *file) reopen() error {
	nf, err := openFile(w.path)
	if err != nil {
		return err
	}
	w.mu.Lock()
	old := w.f
	w.f = nf
	w.mu.Unlock()
	return old.Close()
}

// Reopen reopens the audit file (after a rotation: SIGHUP). It does
// nothing for a Log that writes into another logger or a plain writer.
func (a *Log) Reopen() error {
	if a == nil || a.file == nil {
		return nil
	}
	return a.file.reopen()
}
