package sshd

import (
	"fmt"

	gossh "golang.org/x/crypto/ssh"
)

// The algorithms the server negotiates, best first. Nothing with SHA-1, no
// CBC, no finite-field Diffie-Hellman (x/crypto's defaults still offer
// diffie-hellman-group14-sha256 and accept ssh-rsa signatures from
// clients). This x/crypto has no sntrup761x25519-sha512@openssh.com; OpenSSH
// clients from 9.9 pick mlkem768x25519-sha256, older ones curve25519-sha256.
var (
	kexAlgorithms = []string{
		gossh.KeyExchangeMLKEM768X25519,
		gossh.KeyExchangeCurve25519,
		"curve25519-sha256@libssh.org", // the same exchange under its old name
		gossh.KeyExchangeECDHP256,
		gossh.KeyExchangeECDHP384,
		gossh.KeyExchangeECDHP521,
	}
	cipherAlgorithms = []string{
		gossh.CipherChaCha20Poly1305,
		gossh.CipherAES128GCM,
		gossh.CipherAES256GCM,
		gossh.CipherAES128CTR,
		gossh.CipherAES192CTR,
		gossh.CipherAES256CTR,
	}
	macAlgorithms = []string{
		gossh.HMACSHA256ETM,
		gossh.HMACSHA512ETM,
		gossh.HMACSHA256,
		gossh.HMACSHA512,
	}
	// publicKeyAuthAlgorithms are the signature algorithms accepted from
	// clients: RSA keys must sign with SHA-2 (rsa-sha2-256/512, which every
	// OpenSSH since 7.2 uses), never ssh-rsa (SHA-1).
	publicKeyAuthAlgorithms = []string{
		gossh.KeyAlgoED25519,
		gossh.KeyAlgoSKED25519,
		gossh.KeyAlgoECDSA256,
		gossh.KeyAlgoECDSA384,
		gossh.KeyAlgoECDSA521,
		gossh.KeyAlgoSKECDSA256,
		gossh.KeyAlgoRSASHA512,
		gossh.KeyAlgoRSASHA256,
	}
)

// algorithmConfig is the x/crypto configuration with the lists above.
func algorithmConfig() gossh.Config {
	return gossh.Config{KeyExchanges: kexAlgorithms, Ciphers: cipherAlgorithms, MACs: macAlgorithms}
}

// hostSigner restricts the host key's signature algorithms to SHA-2: an
// RSA host key signs with rsa-sha2-512/256 only (x/crypto would also offer
// ssh-rsa, SHA-1). termgate generates ed25519 host keys, which have one
// algorithm; DSA keys are refused.
func hostSigner(s gossh.Signer) (gossh.Signer, error) {
	switch s.PublicKey().Type() {
	case gossh.KeyAlgoRSA:
		as, ok := s.(gossh.AlgorithmSigner)
		if !ok {
			return nil, fmt.Errorf("sshd: RSA host key cannot sign with SHA-2")
		}
		return gossh.NewSignerWithAlgorithms(as, []string{gossh.KeyAlgoRSASHA512, gossh.KeyAlgoRSASHA256})
	case "ssh-dss":
		return nil, fmt.Errorf("sshd: DSA host keys are not supported")
	}
	return s, nil
}
