// Package toolboxbin provides the termgate-toolbox binary (a shell and
// common utilities, cmd/termgate-toolbox) that the gateway copies into an
// instance with no shell of its own: embedded by `make build` (build tag
// holderembed, as the holder is), else taken from
// $TERMGATE_TOOLBOX_BINARY or a termgate-toolbox file next to the
// gateway's executable.
package toolboxbin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	if len(embedded) > 0 {
		return holderbin.New(embedded, "embedded"), nil
	}
	from := env
	if from == "" {
		exe, err := executable()
		if err != nil {
			return nil, notBuilt(err.Error())
		}
		from = filepath.Join(filepath.Dir(exe), FileName)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		if env != "" {
			return nil, fmt.Errorf("the toolbox binary named by %s: %w", EnvBinary, err)
		}
		return nil, notBuilt("looked for " + from)
	}
	if len(data) < 4 || string(data[:4]) != "\x7fELF" {
		return nil, errors.New("the toolbox binary " + from + " is not a Linux (ELF) executable: build it with GOOS=linux CGO_ENABLED=0")
	}
	return holderbin.New(data, from), nil
}

func notBuilt(detail string) error {
	return fmt.Errorf("shells in instances without one need the termgate-toolbox binary, which this gateway was built without: "+
		"build the gateway with `make build` (it embeds the toolbox), or build it with "+
		"`CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags=-s -o termgate-toolbox ./cmd/termgate-toolbox` and put it next to the gateway "+
		"or name it in %s (%s)", EnvBinary, detail)
}
