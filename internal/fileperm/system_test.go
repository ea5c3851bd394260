//go:build unix

package fileperm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDirNeverAdvisesChangingASystemDirectory: issue 18 item 11. A shared
// or system directory given as the state directory is refused with the
// advice to pick a private one, never to change its mode; a directory of
// the user's own still gets the chmod.
func TestDirNeverAdvisesChangingASystemDirectory(t *testing.T) {
	c := Default()
	own := filepath.Join(t.TempDir(), "own")
	if err := os.Mkdir(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(own, 0o777); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{"/tmp": "pick a private directory instead", own: "run: chmod go-w " + own} {
		_, err := c.Dir(dir)
		if !errors.Is(err, ErrInsecure) || !strings.Contains(err.Error(), want) {
			t.Errorf("Dir(%s): %v, want %q", dir, err, want)
		}
		if want != "run: chmod go-w "+own && strings.Contains(err.Error(), "chmod") {
			t.Errorf("Dir(%s): %v advises a chmod", dir, err)
		}
	}
}
