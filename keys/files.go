package keys

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/termgate/termgate/internal/fileperm"
)

// maxFileSize bounds the files this package reads (authorized keys, tokens,
// host key): a larger one is refused rather than read into memory.
const maxFileSize = 8 << 20

// readFile reads a file of at most maxFileSize bytes.
func readFile(path string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > maxFileSize {
		return nil, nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileSize)
	}
	return data, fi, nil
}

// createFile creates path with mode 0600 and the given contents, creating its
// parent directory with mode 0700 when missing. It never replaces an
// existing file (the error then wraps fs.ErrExist), and other processes never
// see a partly written file: the data goes to a temporary file in the same
// directory that is then hard-linked into place.
func createFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := writeAndClose(tmp, data); err != nil {
		return err
	}
	err = os.Link(tmp.Name(), path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	// A file system without hard links: create the file exclusively and
	// write it in place.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := writeAndClose(f, data); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

func writeAndClose(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readTrustFile reads a file that grants access (authorized keys, tokens,
// user CAs) after checking that nobody but root and the gateway's user can
// change it: the file must not be writable by group or others nor owned by
// another user, and no directory or symbolic link on its path may be
// replaceable by another user (fileperm). A refusal is an error, so a store
// keeps its previous set and logs why. warnings name group-writable
// directories on the path. A missing file is an error wrapping
// fs.ErrNotExist, unless its directory is refused first.
func readTrustFile(path, what string) (data []byte, fi os.FileInfo, warnings []string, err error) {
	check := fileperm.Default()
	warnings, err = check.File(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, warnings, err
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s refused, not used: %w", what, err)
	}
	data, fi, err = readFile(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read %s: %w", what, err)
	}
	// Again on the opened file: what was read is what was checked.
	if err := check.Info(path, fi, 0o022); err != nil {
		return nil, nil, nil, fmt.Errorf("%s refused, not used: %w", what, err)
	}
	return data, fi, warnings, nil
}
