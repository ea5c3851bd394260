package holder

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// Deployments on one engine stay apart (CONTRACT.md, "Durable sessions"
// item 7): every holder has a key (KeyLen bytes) that only the gateways of
// the deployment that started it can compute (backend/exechost derives it
// per instance from the deployment's secret), and both ends of a
// connection prove they have it before anything else happens:
//
//	gateway → holder  Hello{Nonce: gN}
//	holder → gateway  Hello{Nonce: hN, Proof: HMAC(key, "holder\x00"+gN+"\x00"+hN)}
//	gateway → holder  Attach{Proof: HMAC(key, "gateway\x00"+hN+"\x00"+gN)}
//
// Fresh nonces on both sides make a proof useless on another connection,
// and the role prefix makes the holder's proof useless as a gateway's. A
// gateway that gets a wrong proof leaves that holder (another deployment's,
// or a fake) alone; a holder that gets one refuses the connection, and
// until the proof it takes no other frame.

// KeyLen is the length of a holder's key.
const KeyLen = 32

// KeyLineLen is the length of the key line a gateway writes first on a
// "serve --key-stdin" exec's stdin: the key in hex and a newline.
const KeyLineLen = 2*KeyLen + 1

// nonceLen is the length of a hello's nonce, in bytes (hex on the wire).
const nonceLen = 16

// ErrForeign is what a gateway's Dial returns for a holder that could not
// prove it has the gateway's key: another deployment's holder (or none at
// all). Leave it alone.
var ErrForeign = errors.New("holder started by another deployment (its hello has no valid proof)")

// errNotOurs is what a holder answers a gateway that could not prove it
// has the key, before it closes the connection.
const errNotOurs = "not started by this gateway's deployment"

// KeyLine encodes key as the line a gateway writes to "serve --key-stdin".
func KeyLine(key []byte) []byte {
	b := make([]byte, 0, KeyLineLen)
	b = hex.AppendEncode(b, key)
	return append(b, '\n')
}

// ReadKeyLine reads exactly one key line from r and nothing more (the rest
// of r is the gateway's stream).
func ReadKeyLine(r io.Reader) ([]byte, error) {
	line := make([]byte, KeyLineLen)
	if _, err := io.ReadFull(r, line); err != nil {
		return nil, fmt.Errorf("read the key line: %w", err)
	}
	return ParseKeyLine(line)
}

// ParseKeyLine decodes a key line.
func ParseKeyLine(line []byte) ([]byte, error) {
	if len(line) != KeyLineLen || line[KeyLineLen-1] != '\n' {
		return nil, errors.New("the key line is not 64 hex digits and a newline")
	}
	key, err := hex.DecodeString(string(line[:KeyLineLen-1]))
	if err != nil {
		return nil, errors.New("the key line is not 64 hex digits and a newline")
	}
	return key, nil
}

func newNonce() string {
	b := make([]byte, nonceLen)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// validNonce refuses a nonce that is not nonceLen bytes in lower-case hex:
// a peer's nonce goes into a proof and must be what a genuine peer sends.
func validNonce(n string) bool {
	if len(n) != 2*nonceLen {
		return false
	}
	for _, c := range []byte(n) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func proof(key []byte, role, first, second string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(role + "\x00" + first + "\x00" + second))
	return hex.EncodeToString(mac.Sum(nil))
}

// HolderProof is the proof a holder with key sends in its hello, for the
// gateway's nonce and its own.
func HolderProof(key []byte, gatewayNonce, holderNonce string) string {
	return proof(key, "holder", gatewayNonce, holderNonce)
}

// gatewayProof is the proof a gateway with key sends in its attach.
func gatewayProof(key []byte, gatewayNonce, holderNonce string) string {
	return proof(key, "gateway", holderNonce, gatewayNonce)
}

// proofOK compares a proof in constant time.
func proofOK(got, want string) bool { return hmac.Equal([]byte(got), []byte(want)) }
