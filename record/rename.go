package record

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A renamed instance's session follows the new name (sessions), and so
// does its recording: the file moves to the new name's directory, with
// everything recorded before, and goes on there. Recordings are read by
// instance name (GET /api/recordings/{instance}/{session}), so one left
// under the old name would stay readable by credentials allowed on the old
// name only, what the renamed instance prints next included (issue 18,
// M2). The move is an event in the recording's queue: output printed
// after the rename is written after the file moved.

// Rename (sessions.RenameObserver) says the session's instance is now
// called instance. It does not block: the recording's goroutine moves the
// file.
func (rec *Recording) Rename(instance string) {
	if err := checkName(instance); err != nil {
		return // sessions only renames to names that are valid here
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.closed || rec.stopped {
		return // the file is closed: it stays where it is
	}
	rec.cur = filepath.ToSlash(filepath.Join(instance, rec.file))
	// Never dropped for a full queue: it costs nothing to keep.
	rec.pushLocked(event{kind: 'n', data: []byte(instance)}, eventCost)
}

// moved carries out a rename event; on an error the recording stops.
func (cf *castFile) moved(instance string) bool {
	if err := cf.rec.moved(cf.file, instance); err != nil {
		cf.fail(err)
		return false
	}
	return true
}

// moved carries out a rename event: the file being written (name, in the
// directory of rec.instance or of the last rename) moves to instance's
// directory. An error stops the recording: going on in the old name's
// directory is what the move is for not to do.
func (rec *Recording) moved(name, instance string) error {
	from := rec.instance
	if rec.renamed != "" {
		from = rec.renamed
	}
	if from == instance {
		return nil
	}
	if move := rec.r.cfg.move; move != nil {
		if err := move(from, instance, name); err != nil {
			return fmt.Errorf("the instance %s was renamed %s: %w", from, instance, err)
		}
	}
	rec.renamed = instance
	rec.log = rec.log.With("recording", filepath.Join(instance, name), "renamed_from", from)
	rec.log.Info("recording moved: its instance was renamed")
	return nil
}

// moveFile moves FROM/NAME to TO/NAME under the recording directory dirFD,
// creating TO 0700 (and refusing it when it is a link or others can change
// it, as create does), never replacing a file there.
func moveFile(dirFD int, root, from, to, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	src, err := openInstanceDir(dirFD, root, from)
	if err != nil {
		return err
	}
	defer unix.Close(src)
	dst, err := openInstanceDir(dirFD, root, to)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	err = unix.Renameat2(src, name, dst, name, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// A file system without RENAME_NOREPLACE: a hard link is never
		// made over an existing file either.
		if err = unix.Linkat(src, name, dst, name, 0); err == nil {
			err = unix.Unlinkat(src, name, 0)
		}
	}
	if err != nil {
		return fmt.Errorf("move %s to %s: %w", filepath.Join(root, from, name), filepath.Join(root, to, name), err)
	}
	return nil
}
