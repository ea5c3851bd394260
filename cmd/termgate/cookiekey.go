package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/termgate/termgate/websock"
)

// cookieKeyFile is the login cookies' HMAC key in the state directory.
const cookieKeyFile = "cookie_key"

// loadOrCreateCookieKey returns the key that signs the browser login
// cookies: websock.CookieKeyLen random bytes kept in path (mode 0600), so
// that browser logins survive a restart. The first start creates it; a
// file of another length, or one readable by group or others, is refused.
// Removing the file signs every browser out at the next start.
func loadOrCreateCookieKey(path string) (key []byte, created bool, err error) {
	key, err = readCookieKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	key = make([]byte, websock.CookieKeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("generate the cookie key: %w", err)
	}
	switch err := createExclusive(path, key); {
	case errors.Is(err, fs.ErrExist): // another termgate made it first: use theirs
		key, err = readCookieKey(path)
		return key, false, err
	case err != nil:
		return nil, false, fmt.Errorf("create the cookie key: %w", err)
	}
	return key, true, nil
}

func readCookieKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const remedy = "remove it to have a new key made at the next start (that signs every browser out)"
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("cookie key %s is not a regular file: %s", path, remedy)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("cookie key %s has mode %04o: anyone who can read it can forge browser logins; run: chmod 600 %s", path, perm, path)
	}
	key, err := io.ReadAll(io.LimitReader(f, websock.CookieKeyLen+1))
	if err != nil {
		return nil, fmt.Errorf("read the cookie key: %w", err)
	}
	if len(key) != websock.CookieKeyLen {
		return nil, fmt.Errorf("cookie key %s is not %d bytes: %s", path, websock.CookieKeyLen, remedy)
	}
	return key, nil
}

// createExclusive writes data to path (0600) without ever replacing an
// existing file or letting another process see it partly written: the data
// goes to a temporary file that is then hard-linked into place.
func createExclusive(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}
