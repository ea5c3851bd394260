package websock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/termgate/termgate/record"
	"github.com/termgate/termgate/sessions"
)

// Bounds of GET /api/recordings: the directory is the instances', which
// write into it, so the listing reads only a little of each file and lists
// at most maxListed of them (the newest).
const (
	maxListed     = 500   // recordings in one answer
	maxScanned    = 20000 // directory entries looked at, over all instances
	castHeadBytes = 4096  // read for the header line (width, height, timestamp)
	castTailBytes = 4096  // read for the last event's time (the duration)
)

// recordingInfo is one entry of GET /api/recordings.
type recordingInfo struct {
	Instance string     `json:"instance"`
	Session  string     `json:"session"`
	Size     int64      `json:"size"`
	Modified time.Time  `json:"modified"`
	Started  *time.Time `json:"started,omitempty"`
	Duration *float64   `json:"duration,omitempty"` // seconds, from the last complete event
	Width    int        `json:"width,omitempty"`
	Height   int        `json:"height,omitempty"`
	Live     bool       `json:"live"` // the session is still running (the file grows)

	dir string // the instance directory the file is in (the old name after a rename)
}

// handleRecordings serves GET /api/recordings[?instance=NAME]: the
// recordings this caller may read with GET /api/recordings/{name}/{session}
// (instanceFor's permission, and a live session's current name as
// handleRecording checks it), newest first. Instances the caller may not use
// are skipped before their directory is opened, so the answer says nothing
// about them. 404 when recordings are off.
func (s *Server) handleRecordings(w http.ResponseWriter, r *http.Request) {
	c, _ := callerFrom(r.Context())
	if s.cfg.RecordDir == "" {
		writeError(w, http.StatusNotFound, "recordings are off: start the gateway with --record-dir DIR to record sessions")
		return
	}
	only := r.URL.Query().Get("instance")
	if only != "" {
		if err := sessions.CheckName(only); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	// The live sessions' current names: a recording stays under its
	// session's old name until it is moved after a rename.
	live := map[string]string{}
	for _, in := range s.cfg.Registry.Sessions() {
		live[in.Session] = in.Instance
	}
	dirs, err := os.ReadDir(s.cfg.RecordDir)
	if err != nil {
		s.log.Warn("list recordings", "dir", s.cfg.RecordDir, "err", err)
		writeError(w, http.StatusServiceUnavailable, "could not read the recording directory; see the gateway log")
		return
	}
	out := []recordingInfo{}
	scanned := 0
	for _, d := range dirs {
		// Only real directories: Type() is from the directory entry,
		// so a symbolic link is never followed.
		if !d.IsDir() || sessions.CheckName(d.Name()) != nil || !c.id.May(d.Name()) {
			continue
		}
		if scanned >= maxScanned {
			break
		}
		files, err := readDirAtMost(filepath.Join(s.cfg.RecordDir, d.Name()), maxScanned-scanned)
		if err != nil {
			continue
		}
		scanned += len(files)
		for _, f := range files {
			id, ok := strings.CutSuffix(f.Name(), ".cast")
			if !ok || !f.Type().IsRegular() || record.CheckSession(id) != nil {
				continue // SESSION.continued-N.cast and strangers are not served by name either
			}
			inst := d.Name()
			if cur, ok := live[id]; ok && cur != inst {
				if !c.id.May(cur) {
					continue // renamed out of reach: handleRecording refuses it too
				}
				inst = cur
			}
			if only != "" && inst != only {
				continue
			}
			fi, err := f.Info()
			if err != nil {
				continue
			}
			_, isLive := live[id]
			out = append(out, recordingInfo{Instance: inst, Session: id, Size: fi.Size(), Modified: fi.ModTime().UTC(), Live: isLive, dir: d.Name()})
			// Keep the newest maxListed only, as we go: memory stays
			// bounded whatever the directory holds.
			if len(out) > 2*maxListed {
				out = newest(out, maxListed)
			}
		}
	}
	out = newest(out, maxListed)
	for i := range out {
		s.describeCast(&out[i])
	}
	writeJSON(w, http.StatusOK, out)
}

// readDirAtMost reads at most n entries of a directory (in directory
// order): an instance that made millions of files costs a bounded read.
// O_NOFOLLOW: a directory swapped for a link since it was listed is not
// followed.
func readDirAtMost(path string, n int) ([]os.DirEntry, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), path)
	defer d.Close()
	list, err := d.ReadDir(n)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return list, nil
}

// newest sorts list newest first and keeps n.
func newest(list []recordingInfo, n int) []recordingInfo {
	sort.Slice(list, func(i, j int) bool {
		if !list[i].Modified.Equal(list[j].Modified) {
			return list[i].Modified.After(list[j].Modified)
		}
		return list[i].Session < list[j].Session
	})
	if len(list) > n {
		list = list[:n]
	}
	return list
}

// describeCast fills in the header's size and start and the last event's
// time from the first and last few KB of the file, never the whole file.
func (s *Server) describeCast(ri *recordingInfo) {
	f, err := record.Open(s.cfg.RecordDir, ri.dir, ri.Session)
	if err != nil {
		return
	}
	defer f.Close()
	head := make([]byte, castHeadBytes)
	n, _ := io.ReadFull(f, head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	var h record.Header
	if json.Unmarshal(line, &h) != nil {
		return
	}
	ri.Width, ri.Height = h.Width, h.Height
	if h.Timestamp > 0 {
		t := time.Unix(h.Timestamp, 0).UTC()
		ri.Started = &t
	}
	tail := make([]byte, castTailBytes)
	n, _ = f.ReadAt(tail, max(ri.Size-castTailBytes, 0))
	if d, ok := lastEventTime(tail[:n]); ok {
		ri.Duration = &d
	}
}

// lastEventTime is the time of the last complete [time, code, data] line
// in the end of a cast file.
func lastEventTime(b []byte) (float64, bool) {
	lines := bytes.Split(b, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if len(l) < 2 || l[0] != '[' {
			continue
		}
		num, _, ok := bytes.Cut(l[1:], []byte(","))
		if !ok {
			continue
		}
		if t, err := strconv.ParseFloat(string(bytes.TrimSpace(num)), 64); err == nil && t >= 0 {
			// The line must be whole (a write may be under way).
			var ev []json.RawMessage
			if json.Unmarshal(l, &ev) == nil && len(ev) >= 3 {
				return t, true
			}
		}
	}
	return 0, false
}
