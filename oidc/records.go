package oidc

import (
	"context"
	"errors"
	"strings"
)

// Records is where a Store keeps its sealed records, by name: a directory
// on one host (DirRecords), a Kubernetes Secret for replicas that share no
// writable directory (backend/kubernetes), memory in tests (MemRecords).
// It only stores bytes: sealing, the MACs (which bind each record to its
// name), expiry and rebuilding the state stay in the Store, the same for
// every implementation, so a store that anyone can write to still grants
// nothing that this deployment's key did not seal.
//
// Names are what the Store makes (kind, '-', 32 hex digits): valid file
// names and valid Secret keys alike.
type Records interface {
	// Load returns every record and a version that changes whenever any
	// record does; the Store skips rebuilding while it stays the same (""
	// tells nothing: the Store rebuilds). The Store keeps the returned
	// slices and never changes them; an implementation may return the same
	// slice again for a record that did not change, which the Store then
	// does not open again.
	Load(ctx context.Context) (recs map[string][]byte, version string, err error)
	// Put stores data under name, replacing what was there. A store of
	// bounded size refuses with an error wrapping ErrFull a record that
	// would fill it: ordinary records (remembered keys) at a lower bound,
	// Essential ones (logouts, forgotten keys) only when there is no room
	// at all.
	Put(ctx context.Context, name string, data []byte) error
	// Delete removes the records named; a name not there is no error.
	Delete(ctx context.Context, names ...string) error
	// Where says where the record name is, for logs ("/var/lib/termgate/
	// signins/k-…", "Secret ns/termgate-signins, key k-…").
	Where(name string) string
}

// ErrFull is wrapped by the error of a Put that found no room.
var ErrFull = errors.New("the sign-in state is full")

// Essential reports whether losing the record name could let someone in
// who should not be: a logout or a forgotten key's tombstone, which a
// store of bounded size keeps room for. A remembered key is not: refusing
// one only makes its user sign in again.
func Essential(name string) bool {
	return strings.HasPrefix(name, kindLogout+"-") || strings.HasPrefix(name, kindForgot+"-")
}
