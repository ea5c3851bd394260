// Package toolboxbin provides the termgate-toolbox binary (a shell and
// common utilities, cmd/termgate-toolbox) that the gateway copies into an
// instance with no shell of its own: embedded by `make build` (build tag
// holderembed, as the holder is), else taken from
// $TERMGATE_TOOLBOX_BINARY or a termgate-toolbox file next to the
// gateway's executable.
package toolboxbin

import (
	"fmt"
	"os"
	"sync"

	"github.com/termgate/termgate/internal/holderbin"
)

// EnvBinary names the toolbox binary to use when none is embedded.
const EnvBinary = "TERMGATE_TOOLBOX_BINARY"

// FileName is the toolbox binary's name next to the gateway's executable.
const FileName = "termgate-toolbox"

var embedded []byte

var (
	loadOnce sync.Once
	loaded   *holderbin.Binary
	loadErr  error
)

// Load returns the toolbox binary: the embedded one, else the file named
// by $TERMGATE_TOOLBOX_BINARY, else termgate-toolbox next to the
// executable. Its error says how to get one.
func Load() (*holderbin.Binary, error) {
	loadOnce.Do(func() { loaded, loadErr = load(os.Getenv(EnvBinary), os.Executable) })
	return loaded, loadErr
}

func load(env string, executable func() (string, error)) (*holderbin.Binary, error) {
	return holderbin.Find(holderbin.Where{What: "toolbox", Embedded: embedded, Env: env, EnvName: EnvBinary, FileName: FileName, Executable: executable,
		NotBuilt: func(looked string) error {
			return fmt.Errorf("shells in instances without one need the termgate-toolbox binary, which this gateway was built without: "+
				"build the gateway with `make build` (it embeds the toolbox), or build it with "+
				"`CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags=-s -o termgate-toolbox ./cmd/termgate-toolbox` and put it next to the gateway "+
				"or name it in %s (looked for %s)", EnvBinary, looked)
		}})
}
