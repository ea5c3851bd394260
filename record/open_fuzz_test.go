package record

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen: whatever instance and session a request names, Open serves
// only the one recording that exists (web1/0123abcd.cast), never the file
// planted beside the directory, through a link in it, or anything else.
func FuzzOpen(f *testing.F) {
	for _, seed := range [][2]string{
		{"web1", "0123abcd"}, {"..", "0123abcd"}, {"../outside", "0123abcd"}, {"web1/..", "0123abcd"},
		{"web1", "../0123abcd"}, {"web1", "0123ABCD"}, {"web1", "0123abcd.cast"}, {"link", "0123abcd"},
		{"web1", "0123abcd\x00"}, {".", "0123abcd"}, {"", ""}, {"web1", "00"},
	} {
		f.Add(seed[0], seed[1])
	}
	base := f.TempDir()
	dir := filepath.Join(base, "rec")
	if err := os.MkdirAll(filepath.Join(dir, "web1"), 0o700); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web1", "0123abcd.cast"), []byte("the recording"), 0o600); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "outside"), 0o700); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "outside", "0123abcd.cast"), []byte("outside"), 0o600); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(dir, "link")); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside", "0123abcd.cast"), filepath.Join(dir, "web1", "00.cast")); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, instance, session string) {
		if CheckSession(session) == nil {
			for _, c := range []byte(session) {
				if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
					t.Fatalf("CheckSession accepted %q", session)
				}
			}
		}
		fh, err := Open(dir, instance, session)
		if err != nil {
			return
		}
		defer fh.Close()
		b, _ := io.ReadAll(fh)
		if instance != "web1" || session != "0123abcd" || string(b) != "the recording" {
			t.Fatalf("Open(%q, %q) served %q", instance, session, b)
		}
	})
}
