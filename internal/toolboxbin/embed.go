//go:build holderembed

package toolboxbin

import _ "embed"

// toolbox is internal/toolboxbin/termgate-toolbox, which `make build`
// compiles before the gateway (gitignored), as it does the holder.
//
//go:embed termgate-toolbox
var toolbox []byte

func init() { embedded = toolbox }
