package keys

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"

	"github.com/termgate/termgate/internal/fileperm"
)

// LoadOrCreateSecret returns the n-byte secret kept in path (mode 0600),
// creating it with random bytes on first use (for example the key that signs
// browser login cookies, so that logins survive a restart). A file of
// another length, or one group or others can read, is refused; what is
// there is never replaced.
func LoadOrCreateSecret(path string, n int) (secret []byte, created bool, err error) {
	secret, err = readSecret(path, n)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, false, err
	}
	secret = make([]byte, n)
	if _, err := rand.Read(secret); err != nil {
		return nil, false, fmt.Errorf("generate %s: %w", path, err)
	}
	switch err := createFile(path, secret); {
	case errors.Is(err, fs.ErrExist): // another process made it first: use theirs
		secret, err = readSecret(path, n)
		return secret, false, err
	case err != nil:
		return nil, false, fmt.Errorf("create %s: %w", path, err)
	}
	return secret, true, nil
}

func readSecret(path string, n int) ([]byte, error) {
	data, fi, err := readFile(path)
	if err != nil {
		return nil, err
	}
	const remedy = "remove it to have a new one made at the next start"
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o: anyone who can read it can forge what it signs; run: chmod 600 %s", path, perm, path)
	}
	if err := fileperm.Default().Info(path, fi, 0); err != nil { // its owner could read it whatever its mode
		return nil, err
	}
	if len(data) != n {
		return nil, fmt.Errorf("%s is not %d bytes: %s", path, n, remedy)
	}
	return data, nil
}
