// Package holderbin provides the termgate-holder binary that a --durable
// gateway copies into instances (see package holder): embedded in the
// gateway by `make build` (build tag holderembed), else taken from
// $TERMGATE_HOLDER_BINARY or a termgate-holder file next to the gateway's
// executable (plain `go build` and `go test` embed nothing).
package holderbin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// EnvBinary names the holder binary to use when none is embedded.
const EnvBinary = "TERMGATE_HOLDER_BINARY"

// FileName is the holder binary's name next to the gateway's executable
// (and in internal/holderbin/ when `make build` embeds it).
const FileName = "termgate-holder"

// embedded is set by embed.go in builds with the holderembed tag.
var embedded []byte

// Binary is one holder build.
type Binary struct {
	// Data is the static Linux executable.
	Data []byte
	// Hash identifies the build by its content (hex, 16 digits): an
	// instance gets a copy only when it does not have this one yet.
	Hash string
	// From says where the binary came from, for logs.
	From string
}

// New returns data as a Binary.
func New(data []byte, from string) *Binary {
	sum := sha256.Sum256(data)
	return &Binary{Data: data, Hash: hex.EncodeToString(sum[:8]), From: from}
}

var (
	loadOnce sync.Once
	loaded   *Binary
	loadErr  error
)

// Load returns the holder binary: the embedded one, else the file named
// by $TERMGATE_HOLDER_BINARY, else termgate-holder next to the executable.
// Its error says how to get one.
func Load() (*Binary, error) {
	loadOnce.Do(func() { loaded, loadErr = load(os.Getenv(EnvBinary), os.Executable) })
	return loaded, loadErr
}

func load(env string, executable func() (string, error)) (*Binary, error) {
	return Find(Where{What: "holder", Embedded: embedded, Env: env, EnvName: EnvBinary, FileName: FileName, Executable: executable,
		NotBuilt: func(looked string) error {
			return fmt.Errorf("durable sessions, file transfer and port forwarding on Docker need the termgate-holder binary, which this gateway was built without: "+
				"build the gateway with `make build` (it embeds the holder), or build the holder with "+
				"`CGO_ENABLED=0 GOOS=linux go build -o termgate-holder ./cmd/termgate-holder` and put it next to the gateway "+
				"or name it in %s (looked for %v)", EnvBinary, looked)
		}})
}

// Where says where a static binary the gateway copies into instances
// (the holder, the toolbox) may be, in the order Find looks.
type Where struct {
	What       string // "holder", "toolbox": for messages
	Embedded   []byte // set by `make build`
	Env        string // the file its environment variable names, if set
	EnvName    string // that variable
	FileName   string // its name next to the gateway's executable
	Executable func() (string, error)
	// NotBuilt is the error when there is none: how to get one, with
	// where it looked.
	NotBuilt func(looked string) error
}

// Find returns the embedded binary, else the file w.Env names, else
// w.FileName next to the executable; what it finds must be an ELF file.
func Find(w Where) (*Binary, error) {
	if len(w.Embedded) > 0 {
		return New(w.Embedded, "embedded"), nil
	}
	if w.Env != "" {
		data, err := os.ReadFile(w.Env)
		if err != nil {
			return nil, fmt.Errorf("the %s binary named by %s: %w", w.What, w.EnvName, err)
		}
		return checked(w.What, data, w.Env)
	}
	var tried []string
	if exe, err := w.Executable(); err == nil {
		path := filepath.Join(filepath.Dir(exe), w.FileName)
		data, err := os.ReadFile(path)
		if err == nil {
			return checked(w.What, data, path)
		}
		tried = append(tried, path)
	}
	return nil, w.NotBuilt(fmt.Sprint(tried))
}

// checked refuses what is plainly not a Linux executable (an ELF file).
func checked(what string, data []byte, from string) (*Binary, error) {
	if len(data) < 4 || string(data[:4]) != "\x7fELF" {
		return nil, errors.New("the " + what + " binary " + from + " is not a Linux (ELF) executable: build it with GOOS=linux CGO_ENABLED=0")
	}
	return New(data, from), nil
}
