package keys

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// minTokenLen is the length under which a token is reported as weak (it is
// still accepted). Generated tokens are 43 characters.
const minTokenLen = 16

// Tokens is a parsed token file. It is immutable; the zero value and nil
// accept no token.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	hash [sha256.Size]byte // sha256 of the token: Check compares fixed-length values
	id   Identity
}

// LoadTokens reads a token file. A missing file is an empty set (reported in
// warnings); err is set only when the file exists but cannot be read.
// Warnings are prefixed with the path and never quote a token.
func LoadTokens(path string) (*Tokens, []string, error) {
	data, fi, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Tokens{}, []string{fmt.Sprintf("%s does not exist: no API token is valid", path)}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read API tokens: %w", err)
	}
	t, warnings := ParseTokens(data)
	if fi.Mode().Perm()&0o077 != 0 {
		warnings = append([]string{fmt.Sprintf("is accessible by group or others (mode %04o): anyone who can read it can use the API; run chmod 600", fi.Mode().Perm())}, warnings...)
	}
	for i, w := range warnings {
		warnings[i] = path + ": " + w
	}
	return t, warnings, nil
}

// LoadOrCreateTokens loads the token file, first creating it (mode 0600,
// parent directory 0700) with one random token when it does not exist.
// created is that new token, or "" when the file already existed. Warnings
// are left to TokenStore, which logs them.
func LoadOrCreateTokens(path string) (t *Tokens, created string, err error) {
	tok, err := NewToken()
	if err != nil {
		return nil, "", err
	}
	switch err := createFile(path, []byte(tok+"\n")); {
	case err == nil:
		created = tok
	case !errors.Is(err, fs.ErrExist):
		return nil, "", fmt.Errorf("create API token file: %w", err)
	}
	t, _, err = LoadTokens(path)
	if err != nil {
		return nil, "", err
	}
	return t, created, nil
}

// NewToken returns a new random token: 32 bytes from crypto/rand in
// unpadded URL-safe base64 (43 characters, safe in URLs and headers).
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate API token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// ParseTokens parses a token file: one "TOKEN [NAME] [instances=GLOB,...]"
// per line (fields separated by blanks, instances= may be quoted and may
// come before NAME); blank lines and # comments are skipped. A bad line is
// skipped and reported ("line N: ..."); a duplicate token keeps its first
// line; a token shorter than 16 characters is accepted but reported.
func ParseTokens(data []byte) (*Tokens, []string) {
	t := &Tokens{}
	var warnings []string
	seen := map[[sha256.Size]byte]int{}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		line := strings.TrimSpace(string(raw))
		if line == "" || line[0] == '#' {
			continue
		}
		tok, id, err := parseTokenLine(line)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("line %d: skipped: %v", n, err))
			continue
		}
		h := sha256.Sum256([]byte(tok))
		if first, dup := seen[h]; dup {
			warnings = append(warnings, fmt.Sprintf("line %d: skipped: same token as line %d", n, first))
			continue
		}
		seen[h] = n
		if id.Name == "" {
			id.Name = fmt.Sprintf("token-%d", len(t.entries)+1)
		}
		if len(tok) < minTokenLen {
			warnings = append(warnings, fmt.Sprintf("line %d (%s): the token is short (%d characters): use at least %d random characters", n, id.Name, len(tok), minTokenLen))
		}
		t.entries = append(t.entries, tokenEntry{hash: h, id: id})
	}
	return t, warnings
}

// parseTokenLine parses one non-blank, non-comment line. Errors never quote
// the token.
func parseTokenLine(line string) (tok string, id Identity, err error) {
	fields := strings.Fields(line)
	tok = fields[0]
	if strings.HasPrefix(tok, "instances=") {
		return "", id, errors.New("the line starts with instances= instead of a token")
	}
	if !printableASCII(tok) {
		return "", id, errors.New("the token has characters other than printable ASCII")
	}
	sawInstances := false
	for _, f := range fields[1:] {
		if v, ok := strings.CutPrefix(f, "instances="); ok {
			if sawInstances {
				return "", id, errors.New("instances= given twice")
			}
			sawInstances = true
			if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			if id.Instances, err = parseInstances(v); err != nil {
				return "", id, err
			}
			continue
		}
		if id.Name != "" {
			return "", id, fmt.Errorf("unexpected field %q after the name (format: TOKEN [NAME] [instances=GLOB,...])", displayName(f, 40))
		}
		id.Name = displayName(f, 64)
	}
	return tok, id, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Len is the number of valid tokens.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// Check reports whether presented is one of the tokens, and whose. It
// compares the sha256 of presented with that of every token in constant time
// and without stopping at a match, so neither the tokens' lengths nor the
// matching position leak through timing.
func (t *Tokens) Check(presented string) (Identity, bool) {
	if t == nil || presented == "" {
		return Identity{}, false
	}
	h := sha256.Sum256([]byte(presented))
	found := -1
	for i := range t.entries {
		eq := subtle.ConstantTimeCompare(h[:], t.entries[i].hash[:])
		first := subtle.ConstantTimeEq(int32(found), -1)
		found = subtle.ConstantTimeSelect(eq&first, i, found)
	}
	if found < 0 {
		return Identity{}, false
	}
	id := t.entries[found].id
	id.Instances = slices.Clone(id.Instances)
	return id, true
}
