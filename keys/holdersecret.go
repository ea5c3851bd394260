package keys

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"fmt"

	gossh "golang.org/x/crypto/ssh"
)

// HolderSecretLen is the length of the secret HolderSecret derives.
const HolderSecretLen = 32

// holderSecretLabel makes the secret one of its own: the same host key keys
// nothing else with it.
const holderSecretLabel = "termgate holder deployment v1"

// HolderSecret derives the deployment's holder secret from the private host
// key in path (already checked and loaded by LoadOrCreateHostKey): every
// gateway with this host key (the replicas of deploy/kubernetes share it)
// derives the same 32 bytes, and nobody without the private key can. A
// durable gateway keys its holders with it, so that it adopts only the
// holders its own deployment started (docs/DURABLE.md).
//
// The private key is encoded as PKCS #8 (deterministic for a given key) and
// the secret is HMAC-SHA256 keyed with that encoding over a fixed label.
func HolderSecret(path string) ([]byte, error) {
	data, _, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("read host key for the holder secret: %w", err)
	}
	raw, err := gossh.ParseRawPrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("parse host key %s for the holder secret: %w", path, err)
	}
	return holderSecretOf(raw)
}

// holderSecretOf derives the secret from a parsed private key.
func holderSecretOf(raw any) ([]byte, error) {
	if k, ok := raw.(*ed25519.PrivateKey); ok {
		raw = *k // the OpenSSH format parses to a pointer; PKCS #8 wants the value
	}
	der, err := x509.MarshalPKCS8PrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("a host key of type %T cannot key durable sessions (%v): use an ed25519, ECDSA or RSA host key", raw, err)
	}
	mac := hmac.New(sha256.New, der)
	mac.Write([]byte(holderSecretLabel))
	return mac.Sum(nil), nil
}
