package keys

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"

	gossh "golang.org/x/crypto/ssh"

	"github.com/termgate/termgate/internal/fileperm"
)

// ErrInsecureKeyFile: the host key file can be read or written by group or
// others. Like sshd, termgate refuses to use such a key.
var ErrInsecureKeyFile = errors.New("private key file is accessible by group or others")

// LoadOrCreateHostKey returns the SSH host key stored at path. When the file
// does not exist it generates an ed25519 key, writes it in OpenSSH PEM
// format with mode 0600 (creating the parent directory with mode 0700) and
// reports created. An existing file is never replaced or regenerated: if it
// cannot be read, does not parse, needs a passphrase or is accessible by
// group or others (ErrInsecureKeyFile), the error says what to do. Any key
// type OpenSSH writes is accepted in an existing file.
func LoadOrCreateHostKey(path string) (signer gossh.Signer, created bool, err error) {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		signer, err := loadHostKey(path)
		return signer, false, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, false, fmt.Errorf("generate host key: %w", err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "termgate host key")
	if err != nil {
		return nil, false, fmt.Errorf("encode host key: %w", err)
	}
	err = createFile(path, pem.EncodeToMemory(block))
	if errors.Is(err, fs.ErrExist) {
		// Another termgate created it first: use theirs.
		signer, err := loadHostKey(path)
		return signer, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("create host key %s: %w", path, err)
	}
	signer, err = gossh.NewSignerFromKey(priv)
	if err != nil {
		return nil, false, fmt.Errorf("host key: %w", err)
	}
	return signer, true, nil
}

// loadHostKey reads and parses an existing host key file.
func loadHostKey(path string) (gossh.Signer, error) {
	const keep = "termgate never replaces an existing host key (clients would see a changed host key)"
	data, fi, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("read host key: %w; fix the file, or move it away to have a new key generated; %s", err, keep)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("host key %s has mode %04o: %w; run: chmod 600 %s", path, perm, ErrInsecureKeyFile, path)
	}
	// Another user who owns it could replace it (and impersonate the
	// gateway) whatever its mode.
	if err := fileperm.Default().Info(path, fi, 0); err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	signer, err := gossh.ParsePrivateKey(data)
	var missing *gossh.PassphraseMissingError
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("host key %s is protected by a passphrase: remove it with ssh-keygen -p -N '' -f %s", path, path)
	}
	if err != nil {
		return nil, fmt.Errorf("parse host key %s: %w; restore it from a backup, or move it away to have a new key generated; %s", path, err, keep)
	}
	return signer, nil
}
