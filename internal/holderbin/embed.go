//go:build holderembed

package holderbin

import _ "embed"

// holder is internal/holderbin/termgate-holder, which `make build`
// compiles before the gateway (gitignored).
//
//go:embed termgate-holder
var holder []byte

func init() { embedded = holder }
