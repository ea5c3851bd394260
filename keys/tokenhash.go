package keys

import (
	"crypto/sha256"
	"crypto/subtle"
)

// TokenHashLen is the length of a token's short identifier (TokenHash).
const TokenHashLen = 16

// TokenHash returns a short identifier of token: the first TokenHashLen
// bytes of its SHA-256. It names a token without revealing it (websock puts
// it in signed login cookies) and is what CheckHash looks up.
func TokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:TokenHashLen]
}

// CheckHash reports whether one of the tokens has the identifier prefix
// (TokenHash), and whose. Like Check it compares with every token in
// constant time and without stopping at a match. A prefix of another length
// matches nothing.
func (t *Tokens) CheckHash(prefix []byte) (Identity, bool) {
	if t == nil || len(prefix) != TokenHashLen {
		return Identity{}, false
	}
	found := -1
	for i := range t.entries {
		eq := subtle.ConstantTimeCompare(prefix, t.entries[i].hash[:TokenHashLen])
		first := subtle.ConstantTimeEq(int32(found), -1)
		found = subtle.ConstantTimeSelect(eq&first, i, found)
	}
	if found < 0 {
		return Identity{}, false
	}
	return t.entries[found].id.clone(), true
}

// CheckHash looks a token identifier up in the current set; see
// Tokens.CheckHash.
func (s *TokenStore) CheckHash(prefix []byte) (Identity, bool) {
	return s.w.cur.Load().CheckHash(prefix)
}
