// Command sftpserver stands in for an image's own OpenSSH sftp-server in
// the tests (busybox has none): SFTP on stdin/stdout from its first byte,
// as sftp-server speaks it.
package main

import (
	"errors"
	"io"
	"os"

	"github.com/pkg/sftp"
)

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return nil }

func main() {
	srv, err := sftp.NewServer(stdio{})
	if err == nil {
		err = srv.Serve()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		os.Stderr.WriteString("sftpserver: " + err.Error() + "\n")
		os.Exit(1)
	}
}
