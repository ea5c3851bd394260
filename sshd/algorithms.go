package sshd

import (
	"fmt"
	"slices"

	gossh "golang.org/x/crypto/ssh"
)

// The algorithms the server negotiates, best first: what current OpenSSH
// hardening guides keep and ssh-audit passes without a failure or a
// warning. Nothing with SHA-1, no CBC, no finite-field Diffie-Hellman
// (x/crypto's defaults still offer diffie-hellman-group14-sha256 and accept
// ssh-rsa signatures from clients), no NIST curves for the key exchange, no
// encrypt-and-MAC. x/crypto adds strict key exchange
// (kex-strict-s-v00@openssh.com) by itself. This x/crypto has no
// sntrup761x25519-sha512@openssh.com; OpenSSH clients from 9.9 pick
// mlkem768x25519-sha256, older ones curve25519-sha256.
var (
	kexAlgorithms = []string{
		gossh.KeyExchangeMLKEM768X25519,
		gossh.KeyExchangeCurve25519,
		"curve25519-sha256@libssh.org", // the same exchange under its old name
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
	}
	// compatKex and compatMACs are added, after the others, with
	// Config.CompatAlgorithms (--ssh-compat-algorithms): for clients limited
	// to the NIST curves (FIPS builds, some embedded and Windows clients) or
	// to encrypt-and-MAC. ssh-audit fails the former (the curves' origin is
	// disputed) and warns on the latter (the MAC is computed over the
	// plaintext).
	compatKex = []string{
		gossh.KeyExchangeECDHP256,
		gossh.KeyExchangeECDHP384,
		gossh.KeyExchangeECDHP521,
	}
	compatMACs = []string{
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

// algorithmConfig is the x/crypto configuration with the lists above, and
// the compat lists after them when compat is set.
func algorithmConfig(compat bool) gossh.Config {
	kex, macs := kexAlgorithms, macAlgorithms
	if compat {
		kex, macs = slices.Concat(kex, compatKex), slices.Concat(macs, compatMACs)
	}
	return gossh.Config{KeyExchanges: kex, Ciphers: cipherAlgorithms, MACs: macs}
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
