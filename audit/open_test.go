//go:build unix

package audit

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/termgate/termgate/internal/fileperm"
)

// An audit log others can read or write is refused (issue 9 item 12: an
// existing file was appended to whatever its mode); a new one is 0600
// whatever the umask.
func TestOpenChecksThePermissions(t *testing.T) {
	discard := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	for mode, refused := range map[os.FileMode]string{
		0o600: "",
		0o640: "",
		0o644: "is readable by others (mode 0644)",
		0o604: "is readable by others (mode 0604)",
		0o620: "is writable by group or others (mode 0620)",
		0o666: "is writable by group or others and readable by others (mode 0666)",
	} {
		path := filepath.Join(dir, "audit-"+mode.String()+".log")
		if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		a, c, err := Open(path, discard)
		if refused == "" {
			if err != nil {
				t.Errorf("mode %04o: %v", mode, err)
				continue
			}
			a.Event(Attach, Who{Via: "ssh"}, "web1", "s1")
			c.Close()
			if data, _ := os.ReadFile(path); !strings.HasPrefix(string(data), "{}\n{") {
				t.Errorf("mode %04o: the event was not appended: %q", mode, data)
			}
			continue
		}
		if !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "audit log refused: "+path+" "+refused) || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("mode %04o: err = %v", mode, err)
		}
	}

	old := syscall.Umask(0)
	path := filepath.Join(dir, "new.log")
	_, c, err := Open(path, discard)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new audit log: %v, %v; want mode 0600", fi.Mode(), err)
	}

	if os.Geteuid() == 0 {
		theirs := filepath.Join(dir, "theirs.log")
		if err := os.WriteFile(theirs, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Open(theirs, discard); !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "owned by uid 4242") {
			t.Errorf("another user's file: %v", err)
		}
	}
	// A pipe or terminal is used as it is.
	if _, c, err := Open("/dev/null", discard); err != nil {
		t.Errorf("/dev/null: %v", err)
	} else {
		c.Close()
	}
}

// After a rotation (the file renamed away), Reopen sends the records to
// a new file at the path, 0600; the renamed one keeps what it had.
func TestReopenFollowsARotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	a, c, err := Open(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a.Event(Attach, Who{Via: "ssh", Name: "before"}, "web1", "s1")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := a.Reopen(); err != nil {
		t.Fatal(err)
	}
	a.Event(Attach, Who{Via: "ssh", Name: "after"}, "web1", "s1")
	old, _ := os.ReadFile(path + ".1")
	cur, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(old), `"who":"before"`) || strings.Contains(string(old), `"who":"after"`) ||
		!strings.Contains(string(cur), `"who":"after"`) || strings.Contains(string(cur), `"who":"before"`) {
		t.Fatalf("rotated %q, new %q (%v)", old, cur, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("the new file is %v", fi.Mode())
	}
	// Into and a nil Log have nothing to reopen.
	if err := Into(slog.New(slog.DiscardHandler)).Reopen(); err != nil {
		t.Error(err)
	}
	var none *Log
	if err := none.Reopen(); err != nil {
		t.Error(err)
	}
}
