//go:build !linux

package local

import "os/exec"

// waitExit waits for the shell to exit and reaps it (see exit_linux.go for
// why Linux does more).
func waitExit(cmd *exec.Cmd) error { return cmd.Wait() }
