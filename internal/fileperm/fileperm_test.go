package fileperm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// base returns a fresh directory, mode 0700 whatever the umask, under the
// test's temporary directory (itself under /tmp: sticky, root's).
func base(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	chmod(t, dir, 0o700)
	return dir
}

func chmod(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string, mode fs.FileMode) string {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	chmod(t, path, mode)
	return path
}

func write(t *testing.T, path string, mode fs.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	chmod(t, path, mode)
	return path
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// otherOwner makes path belong to another, non-root user as far as the
// returned Checker can tell: as root, path is given to uid 4242; otherwise
// the Checker pretends the gateway runs as another uid than the test.
func otherOwner(t *testing.T, path string) Checker {
	t.Helper()
	if os.Geteuid() != 0 {
		return Checker{UID: os.Geteuid() + 1}
	}
	if err := os.Lchown(path, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	return Default()
}

func wantRefused(t *testing.T, err error, parts ...string) {
	t.Helper()
	if !errors.Is(err, ErrInsecure) {
		t.Fatalf("err = %v, want a refusal (ErrInsecure)", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("err = %q, want it to contain %q", err, p)
		}
	}
}

func TestDir(t *testing.T) {
	c := Default()
	t.Run("0700 and 0755 are accepted", func(t *testing.T) {
		for _, mode := range []fs.FileMode{0o700, 0o755, 0o750} {
			dir := mkdir(t, filepath.Join(base(t), "state"), mode)
			if w, err := c.Dir(dir); err != nil || len(w) != 0 {
				t.Errorf("mode %04o: %q, %v", mode, w, err)
			}
		}
	})
	t.Run("writable by group or others is refused", func(t *testing.T) {
		for _, mode := range []fs.FileMode{0o770, 0o777, 0o707, 0o777 | fs.ModeSticky} {
			dir := mkdir(t, filepath.Join(base(t), "state"), 0)
			chmod(t, dir, mode)
			_, err := c.Dir(dir)
			wantRefused(t, err, "state directory "+dir+" is writable by group or others", "run: chmod go-w "+dir)
		}
	})
	t.Run("owned by another user is refused", func(t *testing.T) {
		dir := mkdir(t, filepath.Join(base(t), "state"), 0o700)
		_, err := otherOwner(t, dir).Dir(dir)
		wantRefused(t, err, "is owned by uid")
	})
	t.Run("a parent writable by others is refused", func(t *testing.T) {
		open := mkdir(t, filepath.Join(base(t), "open"), 0o777)
		dir := mkdir(t, filepath.Join(open, "state"), 0o700)
		_, err := c.Dir(dir)
		wantRefused(t, err, open+" is on the path to "+dir+" and writable by others (mode 0777)", "chmod o-w "+open)
	})
	t.Run("a sticky parent writable by others is accepted", func(t *testing.T) {
		tmp := mkdir(t, filepath.Join(base(t), "tmp"), 0o777|fs.ModeSticky)
		dir := mkdir(t, filepath.Join(tmp, "state"), 0o700)
		if w, err := c.Dir(dir); err != nil || len(w) != 0 {
			t.Fatalf("%q, %v", w, err)
		}
	})
	t.Run("a group-writable parent is a warning", func(t *testing.T) {
		grp := mkdir(t, filepath.Join(base(t), "checkout"), 0o775)
		dir := mkdir(t, filepath.Join(grp, "state"), 0o700)
		w, err := c.Dir(dir)
		if err != nil || len(w) != 1 || !strings.Contains(w[0], grp+" is on the path to "+dir+" and writable by its group") || !strings.Contains(w[0], "chmod g-w "+grp) {
			t.Fatalf("%q, %v", w, err)
		}
	})
	t.Run("a parent owned by another user is refused", func(t *testing.T) {
		theirs := mkdir(t, filepath.Join(base(t), "theirs"), 0o755)
		dir := mkdir(t, filepath.Join(theirs, "state"), 0o700)
		_, err := otherOwner(t, theirs).Dir(dir)
		wantRefused(t, err, "on the path to "+dir, "is owned by uid")
	})
	t.Run("a symlink to a safe directory is accepted", func(t *testing.T) {
		b := base(t)
		real := mkdir(t, filepath.Join(b, "real"), 0o700)
		link := symlink(t, "real", filepath.Join(b, "link"))
		if w, err := c.Dir(link); err != nil || len(w) != 0 {
			t.Fatalf("%q, %v", w, err)
		}
		// Relative targets with .. resolve as the kernel does.
		sub := mkdir(t, filepath.Join(b, "sub"), 0o700)
		up := symlink(t, "../real", filepath.Join(sub, "up"))
		if w, err := c.Dir(up); err != nil || len(w) != 0 {
			t.Fatalf("%q, %v", w, err)
		}
		_ = real
	})
	t.Run("a symlink to a directory writable by others is refused", func(t *testing.T) {
		b := base(t)
		real := mkdir(t, filepath.Join(b, "real"), 0o777)
		link := symlink(t, real, filepath.Join(b, "link"))
		_, err := c.Dir(link)
		wantRefused(t, err, "state directory "+link+" ("+real+") is writable by group or others")
	})
	t.Run("a symlink into a directory writable by others is refused", func(t *testing.T) {
		b := base(t)
		open := mkdir(t, filepath.Join(b, "open"), 0o777)
		mkdir(t, filepath.Join(open, "state"), 0o700)
		link := symlink(t, filepath.Join(open, "state"), filepath.Join(b, "link"))
		_, err := c.Dir(link)
		wantRefused(t, err, open+" is on the path to "+link+" and writable by others")
	})
	t.Run("a symlink in a directory writable by others is refused", func(t *testing.T) {
		b := base(t)
		real := mkdir(t, filepath.Join(b, "real"), 0o700)
		open := mkdir(t, filepath.Join(b, "open"), 0o777)
		link := symlink(t, real, filepath.Join(open, "link"))
		_, err := c.Dir(link)
		wantRefused(t, err, open+" is on the path to "+link+" and writable by others")
	})
	t.Run("another user's symlink in a sticky directory is refused", func(t *testing.T) {
		b := base(t)
		real := mkdir(t, filepath.Join(b, "real"), 0o700)
		tmp := mkdir(t, filepath.Join(b, "tmp"), 0o777|fs.ModeSticky)
		link := symlink(t, real, filepath.Join(tmp, "link"))
		_, err := otherOwner(t, link).Dir(link)
		wantRefused(t, err, "is owned by uid")
	})
	t.Run("a symlink loop is an error", func(t *testing.T) {
		b := base(t)
		a := symlink(t, "b", filepath.Join(b, "a"))
		symlink(t, "a", filepath.Join(b, "b"))
		if _, err := c.Dir(a); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("missing is fs.ErrNotExist", func(t *testing.T) {
		if _, err := c.Dir(filepath.Join(base(t), "none")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a file is not a directory", func(t *testing.T) {
		f := write(t, filepath.Join(base(t), "f"), 0o600)
		if _, err := c.Dir(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a relative path", func(t *testing.T) {
		b := base(t)
		mkdir(t, filepath.Join(b, "state"), 0o700)
		t.Chdir(b)
		if w, err := c.Dir("state"); err != nil || len(w) != 0 {
			t.Fatalf("%q, %v", w, err)
		}
		chmod(t, filepath.Join(b, "state"), 0o777)
		_, err := c.Dir("./state")
		wantRefused(t, err, "state directory ./state ("+filepath.Join(b, "state")+")")
	})
}

func TestFile(t *testing.T) {
	c := Default()
	t.Run("not writable by others is accepted", func(t *testing.T) {
		for _, mode := range []fs.FileMode{0o600, 0o644, 0o400, 0o444, 0o640} {
			f := write(t, filepath.Join(base(t), "authorized_keys"), mode)
			if w, err := c.File(f); err != nil || len(w) != 0 {
				t.Errorf("mode %04o: %q, %v", mode, w, err)
			}
		}
	})
	t.Run("writable by group or others is refused", func(t *testing.T) {
		for _, mode := range []fs.FileMode{0o620, 0o602, 0o666, 0o664} {
			f := write(t, filepath.Join(base(t), "authorized_keys"), mode)
			_, err := c.File(f)
			wantRefused(t, err, f+" is writable by group or others", "run: chmod go-w "+f)
		}
	})
	t.Run("owned by another user is refused", func(t *testing.T) {
		f := write(t, filepath.Join(base(t), "authorized_keys"), 0o600)
		_, err := otherOwner(t, f).File(f)
		wantRefused(t, err, "is owned by uid")
	})
	t.Run("through a symlink, the target is checked", func(t *testing.T) {
		b := base(t)
		target := write(t, filepath.Join(b, "target"), 0o666)
		link := symlink(t, "target", filepath.Join(b, "authorized_keys"))
		_, err := c.File(link)
		wantRefused(t, err, target+" is writable by group or others")
	})
	t.Run("in a directory writable by others, also when missing", func(t *testing.T) {
		open := mkdir(t, filepath.Join(base(t), "open"), 0o777)
		f := write(t, filepath.Join(open, "api_token"), 0o600)
		_, err := c.File(f)
		wantRefused(t, err, open+" is on the path to "+f+" and writable by others")
		_, err = c.File(filepath.Join(open, "missing"))
		wantRefused(t, err, "writable by others")
	})
	t.Run("missing in a safe directory is fs.ErrNotExist", func(t *testing.T) {
		if _, err := c.File(filepath.Join(base(t), "none")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a directory is not a regular file", func(t *testing.T) {
		if _, err := c.File(base(t)); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestInfoReadableByOthers(t *testing.T) {
	c := Default()
	b := base(t)
	for mode, ok := range map[fs.FileMode]bool{0o600: true, 0o640: true, 0o604: false, 0o620: false, 0o644: false} {
		f := write(t, filepath.Join(b, "audit.log"), mode)
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Info(f, fi, 0o026)
		if ok != (err == nil) {
			t.Errorf("mode %04o: %v", mode, err)
		}
		if err != nil && !strings.Contains(err.Error(), "chmod 600 "+f) {
			t.Errorf("mode %04o: %v", mode, err)
		}
		os.Remove(f)
	}
}
