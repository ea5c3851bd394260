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
	"strings"
	"unicode"
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
	data, fi, pathWarnings, err := readTrustFile(path, "API tokens")
	if errors.Is(err, fs.ErrNotExist) {
		return &Tokens{}, append(pathWarnings, fmt.Sprintf("%s does not exist: no API token is valid", path)), nil
	}
	if err != nil {
		return nil, nil, err
	}
	t, warnings := ParseTokens(data)
	// Readable by others is only a warning (writable is refused by
	// readTrustFile): secrets mounted by Docker or Kubernetes are often
	// 0444 or 0644, owned by root.
	if perm := fi.Mode().Perm(); perm&0o044 != 0 {
		warnings = append([]string{fmt.Sprintf("is readable by group or others (mode %04o): anyone who can read it can use the API; run chmod 600", perm)}, warnings...)
	}
	for i, w := range warnings {
		warnings[i] = path + ": " + w
	}
	return t, append(pathWarnings, warnings...), nil
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

// tokenFormat is the token line syntax, shown with every refused line.
const tokenFormat = "TOKEN [NAME] [instances=PAT,...] [read-only] [files=download] [logins=LOGIN,...]"

// ParseTokens parses a token file: one "TOKEN [NAME] [instances=PAT,...]
// [read-only] [files=download]" per line (fields separated by blanks, the options in any
// order after the token, the instances= value optionally in double quotes);
// blank lines and # comments are skipped.
//
// A line termgate cannot read exactly as written is refused and reported
// ("line N: refused: ..."), and its token does not work: not on that line,
// and not on a later line with the same token, so a typo never falls back
// to an unrestricted token. Refused are: a field with '=' other than
// instances= (a NAME may not contain '='; options are case-sensitive),
// quotes anywhere but around the instances= value, a NAME with a glob or
// list character (*?[],\) or one spelt like an option (readonly,
// Read_Only, instance, ...), a second NAME, an option given twice, and a
// token that starts with an option or a quote or has characters other than
// printable ASCII. A duplicate token keeps its first line; a token shorter
// than 16 characters is accepted but reported.
func ParseTokens(data []byte) (*Tokens, []string) {
	t := &Tokens{}
	var warnings []string
	type first struct {
		line    int
		refused bool
	}
	seen := map[[sha256.Size]byte]first{}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		line := strings.TrimSpace(string(raw))
		if line == "" || line[0] == '#' {
			continue
		}
		tok, id, err := parseTokenLine(line)
		h := sha256.Sum256([]byte(tok))
		if f, dup := seen[h]; dup && tok != "" {
			why := ""
			if f.refused {
				why = fmt.Sprintf(", which is refused: fix line %d (this token does not work until then)", f.line)
			}
			warnings = append(warnings, fmt.Sprintf("line %d: skipped: same token as line %d%s", n, f.line, why))
			continue
		}
		if err != nil {
			if tok != "" {
				seen[h] = first{line: n, refused: true}
			}
			warnings = append(warnings, fmt.Sprintf("line %d: refused: %v; this line's token does not work until you fix the line (format: %s)", n, err, tokenFormat))
			continue
		}
		seen[h] = first{line: n}
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

// tokenReadOnly is the token-file option that makes a token an observer.
const tokenReadOnly = "read-only"

// parseTokenLine parses one non-blank, non-comment line. tok is set
// whenever the first field could be a token, also when err is set (so
// ParseTokens can refuse the token's later lines). Errors never quote the
// token, nor a field long enough to be one.
func parseTokenLine(line string) (tok string, id Identity, err error) {
	fields := strings.Fields(line)
	first := fields[0]
	switch {
	case strings.HasPrefix(first, "instances=") || strings.HasPrefix(first, "files=") || strings.HasPrefix(first, "logins=") || first == tokenReadOnly:
		return "", id, errors.New("the line starts with an option instead of a token")
	case !printableASCII(first):
		return "", id, errors.New("the token has characters other than printable ASCII")
	case first[0] == '"' || first[0] == '\'':
		return "", id, errors.New("the token starts with a quote: write tokens without quotes")
	}
	tok = first
	id.Kind = KindToken
	var g Grant
	defer func() { id.Grants = []Grant{g} }()
	sawInstances, sawFiles, sawLogins := false, false, false
	for _, f := range fields[1:] {
		if v, ok := strings.CutPrefix(f, "logins="); ok {
			if sawLogins {
				return tok, id, errors.New("logins= given twice")
			}
			sawLogins = true
			if g.Logins, err = parseLogins(v); err != nil {
				return tok, id, err
			}
			continue
		}
		if v, ok := strings.CutPrefix(f, "instances="); ok {
			if sawInstances {
				return tok, id, errors.New("instances= given twice")
			}
			sawInstances = true
			if g.Instances, err = parseTokenInstances(v); err != nil {
				return tok, id, err
			}
			continue
		}
		if v, ok := strings.CutPrefix(f, "files="); ok {
			if sawFiles {
				return tok, id, errors.New("files= given twice")
			}
			sawFiles = true
			if g.Files, err = parseFiles(v); err != nil {
				return tok, id, err
			}
			continue
		}
		if f == tokenReadOnly {
			if g.ReadOnly {
				return tok, id, errors.New("read-only given twice")
			}
			g.ReadOnly = true
			continue
		}
		if err := checkTokenName(f); err != nil {
			return tok, id, err
		}
		if id.Name != "" {
			return tok, id, fmt.Errorf("unexpected %s after the name %q (only one NAME; options are instances=, read-only, files=download and logins=)", showField(f), id.Name)
		}
		id.Name = displayName(f, 64)
	}
	return tok, id, nil
}

// parseTokenInstances parses the value of a token line's instances=: the
// patterns, optionally enclosed in double quotes. Any other quote is an
// error: no instance name has one, so the pattern would match nothing and
// the line would not do what it says.
func parseTokenInstances(v string) ([]string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if strings.ContainsAny(v, `"'`) {
		return nil, errors.New(`instances= has a stray quote: write instances=PAT,... or instances="PAT,..."`)
	}
	return parseInstances(v)
}

// checkTokenName refuses a field in the NAME position that is not plainly a
// name: what a typo of an option, a quoted option or a pattern written
// without instances= looks like. Read as a name, such a field would leave
// the token unrestricted.
func checkTokenName(f string) error {
	if key, _, ok := strings.Cut(f, "="); ok {
		hint := "the only options are instances=PAT,..., read-only, files=download and logins=LOGIN,...; a NAME may not contain '='"
		if strings.EqualFold(strings.Trim(key, `"'`), "instances") || strings.EqualFold(strings.Trim(key, `"'`), "instance") {
			hint = "did you mean instances= (lower case, no quotes around it)?"
		}
		return fmt.Errorf("unknown option %s (%s)", showField(key+"="), hint)
	}
	if strings.ContainsAny(f, `"'`) {
		return fmt.Errorf("unexpected quote in %s: quotes are only allowed around the value of instances= (instances=\"PAT,...\")", showField(f))
	}
	if strings.ContainsAny(f, `*?[],\`) {
		return fmt.Errorf("the NAME %s has a pattern or list character (*?[],\\): to limit the token, write instances=PAT[,PAT]", showField(f))
	}
	norm := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' {
			return -1
		}
		return unicode.ToLower(r)
	}, f)
	switch norm {
	case "readonly", "instances", "instance":
		return fmt.Errorf("the NAME %s is spelt like an option: the options are read-only, instances=PAT,... and files=download (a NAME may not be one of them)", showField(f))
	}
	return nil
}

// showField quotes a field of a token line for a message, unless it is long
// enough to be a token pasted in the wrong place: messages never show a
// token.
func showField(f string) string {
	if len(f) >= minTokenLen {
		return fmt.Sprintf("field (%d characters, not shown)", len(f))
	}
	return fmt.Sprintf("%q", displayName(f, minTokenLen))
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
	return t.entries[found].id.clone(), true
}
