package main

import (
	"github.com/termgate/termgate/backend/docker"
	"github.com/termgate/termgate/backend/kubernetes"
	"github.com/termgate/termgate/backend/local"
	"github.com/termgate/termgate/remote"
)

// Every backend runs commands, serves files and forwards connections: a
// method lost in a refactor would make remote.Partial answer "not
// supported" at run time, so the build catches it here.
var (
	_ remote.Runner = (*docker.Backend)(nil)
	_ remote.Runner = (*kubernetes.Backend)(nil)
	_ remote.Runner = (*local.Backend)(nil)
)
