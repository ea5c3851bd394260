package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/internal/fileperm"
	"github.com/termgate/termgate/internal/termtest"
)

// The gateway refuses to start on a state directory others could change,
// also when it is reached through a symbolic link (issue 9 item 12), and
// with an authorized_keys, token or CA file others may write. A first start
// in a fresh directory passes its own checks (TestRunKeepsBrowserLogins
// AcrossRestarts starts the whole gateway that way).
func TestRunRefusesUnsafeStateAndFiles(t *testing.T) {
	mkdir := func(path string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	writeFile := func(path, data string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	start := func(state string, extra ...string) (string, error) {
		t.Helper()
		o, err := parseFlags(append([]string{
			"--state-dir", state, "--backend", "local", "--local-instances", "web1",
			"--ssh-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		}, extra...), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		var logs termtest.SyncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a run that got past the checks stops at once
		err = run(ctx, o, slog.New(slog.NewTextHandler(&logs, nil)))
		return logs.String(), err
	}
	t.Setenv("HOME", t.TempDir()) // nothing seeded from the real ~/.ssh

	t.Run("state directory writable by others", func(t *testing.T) {
		state := mkdir(filepath.Join(t.TempDir(), "state"), 0o777)
		_, err := start(state)
		if !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "--state-dir refused: state directory "+state+" is writable by group or others (mode 0777)") {
			t.Fatalf("run: %v", err)
		}
		if _, err := os.Stat(filepath.Join(state, "ssh_host_ed25519_key")); err == nil {
			t.Error("a host key was written into the refused directory")
		}
	})
	t.Run("a system directory as the state directory", func(t *testing.T) {
		// Issue 18 item 11: the advice is never to change /tmp's mode.
		_, err := start("/tmp")
		if !errors.Is(err, fileperm.ErrInsecure) || strings.Contains(err.Error(), "chmod") || !strings.Contains(err.Error(), "pick a private directory instead") {
			t.Fatalf("run with --state-dir /tmp: %v, want a refusal that says to pick a private directory, not to chmod /tmp", err)
		}
	})
	t.Run("state directory behind a symlink into a directory others may write", func(t *testing.T) {
		dir := t.TempDir()
		open := mkdir(filepath.Join(dir, "open"), 0o777)
		mkdir(filepath.Join(open, "state"), 0o700)
		link := filepath.Join(dir, "state")
		if err := os.Symlink(filepath.Join(open, "state"), link); err != nil {
			t.Fatal(err)
		}
		_, err := start(link)
		if !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), open+" is on the path to "+link+" and writable by others") {
			t.Fatalf("run: %v", err)
		}
	})
	for _, name := range []string{"authorized_keys", "api_token"} {
		t.Run(name+" writable by group", func(t *testing.T) {
			state := mkdir(filepath.Join(t.TempDir(), "state"), 0o700)
			writeFile(filepath.Join(state, name), "# nothing\n", 0o664)
			_, err := start(state)
			if !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "refused, not used: "+filepath.Join(state, name)+" is writable by group or others (mode 0664)") {
				t.Fatalf("run: %v", err)
			}
		})
	}
	t.Run("trusted CA file writable by others", func(t *testing.T) {
		state := mkdir(filepath.Join(t.TempDir(), "state"), 0o700)
		ca := filepath.Join(t.TempDir(), "user_ca.pub")
		writeFile(ca, "# no CA yet\n", 0o646)
		_, err := start(state, "--trusted-user-ca-keys", ca)
		if !errors.Is(err, fileperm.ErrInsecure) || !strings.Contains(err.Error(), "trusted user CA keys refused, not used: "+ca) {
			t.Fatalf("run: %v", err)
		}
	})
	t.Run("a group-writable directory on the way is a warning", func(t *testing.T) {
		checkout := mkdir(filepath.Join(t.TempDir(), "checkout"), 0o775)
		state := filepath.Join(checkout, ".termgate") // made by the gateway
		logs, err := start(state)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if !strings.Contains(logs, "the state directory may not be safe: "+checkout+" is on the path to "+state+" and writable by its group") {
			t.Errorf("no warning in the log:\n%s", logs)
		}
		if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("state directory: %v, %v", fi, err)
		}
	})
}
