package keys

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	gossh "golang.org/x/crypto/ssh"
)

// SeedAuthorizedKeys gives a first run something to log in with: when path
// does not exist, it creates it (mode 0600, parent directory 0700) with the
// public keys found in home/.ssh/*.pub and returns one description per key
// ("id_ed25519.pub: ssh-ed25519 SHA256:... comment"). Files that hold no
// valid public key, and certificates (*-cert.pub), are left out. When path
// exists, home is empty or no key is found, it does nothing and returns no
// keys (so a later run can still seed once keys exist).
func SeedAuthorizedKeys(path string, home string) (seeded []string, err error) {
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if home == "" {
		return nil, nil
	}
	pubs, err := filepath.Glob(filepath.Join(home, ".ssh", "*.pub"))
	if err != nil {
		return nil, err
	}
	sort.Strings(pubs)
	var out bytes.Buffer
	fmt.Fprintf(&out, "# termgate authorized keys (OpenSSH format), seeded from %s\n", filepath.Join(home, ".ssh"))
	fmt.Fprintf(&out, "# Options: instances=\"GLOB,...\" limits the instances a key may use; from=, no-pty and restrict work as in OpenSSH.\n")
	for _, pub := range pubs {
		data, _, err := readFile(pub)
		if err != nil {
			continue
		}
		key, comment, opts, _, err := gossh.ParseAuthorizedKey(data)
		if err != nil || len(opts) > 0 {
			continue
		}
		if _, cert := key.(*gossh.Certificate); cert {
			continue
		}
		line := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(key)))
		if c := displayName(comment, 200); c != "" {
			line += " " + c
		}
		out.WriteString(line + "\n")
		seeded = append(seeded, strings.TrimSpace(fmt.Sprintf("%s: %s %s %s", filepath.Base(pub), key.Type(), gossh.FingerprintSHA256(key), displayName(comment, 64))))
	}
	if len(seeded) == 0 {
		return nil, nil
	}
	if err := createFile(path, out.Bytes()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("seed authorized keys: %w", err)
	}
	return seeded, nil
}
