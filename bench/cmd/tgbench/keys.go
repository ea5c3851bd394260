package main

import "golang.org/x/crypto/ssh"

// The gateway caps the connections and the sessions of one key at 20 each
// (sshd.Config's MaxConnsPerKey and MaxSessionsPerKey). The fan-out and
// scale phases attach more SSH clients than that, so the state directory
// holds enough keys for perKey clients each.
const perKey = 16

// keysFor is the number of client keys the run needs.
func keysFor(cfg *config) int {
	n := max(cfg.fanout, cfg.scale, perKey+cfg.slowReaders) // the slow SSH readers start at perKey (catchup.go)
	return 1 + (n+perKey-1)/perKey
}

// signerFor returns the key of the i-th of many SSH clients: no key serves
// more than perKey of them.
func (e *env) signerFor(i int) ssh.Signer {
	if i < 0 || len(e.signers) == 0 {
		return e.signer
	}
	return e.signers[(i/perKey)%len(e.signers)]
}
