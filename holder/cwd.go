package holder

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SessionCwd finds the shell of session id among this process's user's
// processes in /proc and returns its working directory: what the browser
// terminal's uploads and downloads resolve relative paths against.
//
// The shell is the oldest process whose environment holds
// TERMGATE_SESSION=id (a held shell's marker) or TERMGATE_SESSION=GW.id
// (an ordinary shell's, under its gateway's id) and whose parent does not
// carry the same marker: the shell's own jobs inherit the marker from it,
// so a process whose parent is marked is a job, never the shell.
//
// Everything here comes from the instance, which is untrusted: the scan is
// bounded (maxCwdScan entries, maxEnvironRead bytes of each environ), the
// marker only picks a process of this user's (its cwd is one this user
// could cd into anyway), and the result must be an absolute directory
// without NUL. An error means "not found": the caller starts from its
// usual directory, never failing a transfer for it.
func SessionCwd(id string) (string, error) {
	return sessionCwdIn("/proc", id)
}

const (
	// maxCwdScan bounds the /proc entries looked at. /proc lists its
	// processes in PID order after its own files, so a bound below the
	// number of processes misses the newest shells: 4096 did on a host
	// running a test suite (the local backend scans the host's /proc),
	// and SFTP started in the home directory. 1<<17 is above the
	// default pid_max (32768) and far above what a machine runs; the
	// environment budget below still bounds the reading.
	maxCwdScan = 1 << 17
	// maxEnvironTotal bounds what the whole scan reads of environments:
	// an instance padding many processes' environments makes the search
	// give up (and the transfer start at home), not take seconds.
	maxEnvironTotal = 32 << 20
	// maxEnvironRead bounds what is read of one process's environment;
	// a marker past it is not seen (the backends append it last, to an
	// environment far smaller).
	maxEnvironRead = 256 << 10
	// maxCwdLen bounds the directory returned (PATH_MAX).
	maxCwdLen = 4096
)

var errNoSessionShell = errors.New("no shell of that session runs as this user")

func sessionCwdIn(proc, id string) (string, error) {
	if id == "" || strings.ContainsAny(id, "\x00=./ ") || len(id) > 128 {
		return "", fmt.Errorf("session id %q: not one", clip(id))
	}
	names, err := procNames(proc)
	if err != nil {
		return "", err
	}
	uid := uint32(os.Getuid())
	marked := map[int]procStat{} // pid: its parent and start time
	read := 0
	for _, n := range names {
		if read > maxEnvironTotal {
			return "", errors.New("too much to read in /proc: gave up looking for the session's shell")
		}
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(proc, n)
		if fi, err := os.Stat(dir); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uid {
			continue
		}
		if !hasMarker(filepath.Join(dir, "environ"), id, &read) {
			continue
		}
		if st, ok := readStat(filepath.Join(dir, "stat")); ok && st.state != "Z" {
			marked[pid] = st
		}
	}
	best, found := 0, procStat{}
	for pid, st := range marked {
		if _, job := marked[st.ppid]; job {
			continue
		}
		if best == 0 || st.start < found.start || st.start == found.start && pid < best {
			best, found = pid, st
		}
	}
	if best == 0 {
		return "", errNoSessionShell
	}
	cwd, err := os.Readlink(filepath.Join(proc, strconv.Itoa(best), "cwd"))
	if err != nil {
		return "", fmt.Errorf("the shell's working directory: %w", err)
	}
	return checkCwd(cwd)
}

// procNames lists proc's entries, at most maxCwdScan of them, in batches
// (one Readdirnames call returns at most its count).
func procNames(proc string) ([]string, error) {
	d, err := os.Open(proc)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	for len(names) < maxCwdScan {
		batch, err := d.Readdirnames(min(4096, maxCwdScan-len(names)))
		names = append(names, batch...)
		if errors.Is(err, io.EOF) || err == nil && len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return names, nil
}

// checkCwd accepts an absolute, existing directory ("/x (deleted)", a
// directory removed under the shell, is not one).
func checkCwd(cwd string) (string, error) {
	if len(cwd) > maxCwdLen || !filepath.IsAbs(cwd) || strings.ContainsRune(cwd, 0) {
		return "", fmt.Errorf("the shell's working directory %q is not an absolute path", clip(cwd))
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("the shell's working directory %q is not a directory", clip(cwd))
	}
	return filepath.Clean(cwd), nil
}

// hasMarker reports whether the environ file holds the session's marker,
// read up to maxEnvironRead bytes; it adds what it read to *budget.
// (killMarked reads whole environments instead: there a process that
// pads its own must not escape the kill.)
func hasMarker(environ, id string, budget *int) bool {
	v, n := sessionMarker(environ, maxEnvironRead)
	*budget += n
	return v != "" && (v == id || strings.HasSuffix(v, "."+id))
}
