package docker

import "github.com/termgate/termgate/backend/exechost"

// The exec host's process types, under the names the tests knew them by.
type (
	process     = exechost.Shell
	heldProcess = exechost.HeldShell
)
