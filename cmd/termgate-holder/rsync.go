package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path"
	"strings"

	"github.com/gokrazy/rsync/rsyncd"

	"github.com/termgate/termgate/holder"
)

// The rsync tool: rsync's remote side for an instance that has no rsync
// (CONTRACT.md "SSH: commands, files and forwarding", Files):
//
//	termgate-holder rsync [--install-as PATH] [--login LOGIN] [--read-only] -- --server [--sender] OPTIONS . PATH...
//	    serves what `rsync --server ...` would on stdin/stdout (protocol
//	    27, github.com/gokrazy/rsync), as the exec's user (or LOGIN),
//	    relative paths from that user's home directory (else /). The
//	    words after -- are those the rsync client asked its remote shell
//	    to run, without the leading "rsync": the gateway parsed them
//	    (sshd/rsync.go); they are checked again here.
//
// --read-only (a download-only credential) serves only --sender and
// refuses the options with which a sender deletes what it sent.

// rsyncRefused are the options this tool never accepts: a daemon
// (--daemon over the remote shell reads a config file and serves modules),
// and options gokrazy's server does not implement though it parses them.
// gokrazy's server (v0.2.5) hangs on --numeric-ids, -z and panics on -c:
// refused here with a sentence instead.
var rsyncRefused = []string{"--daemon", "--config", "--protect-args", "--secluded-args", "--numeric-ids", "--checksum"}

// rsyncDeletesSent are the sender's options that delete what it sent: a
// write, which a read-only credential may not make.
var rsyncDeletesSent = []string{"--remove-source-files", "--remove-sent-files"}

// rsyncValueOpts are the server options whose value is the next word
// (rsync's server_options): the "." that ends the options is never one.
var rsyncValueOpts = map[string]bool{
	"-T": true, "--temp-dir": true, "--partial-dir": true, "--backup-dir": true,
	"--compare-dest": true, "--copy-dest": true, "--link-dest": true,
	"--suffix": true, "--log-format": true, "--out-format": true,
}

// rsyncRequest is a parsed rsync server command line.
type rsyncRequest struct {
	sender bool
	opts   []string // from --server up to the "."
	paths  []string // after the "."
}

// parseRsyncArgs checks args (what follows "rsync" in the client's
// command) and splits them into options and paths.
func parseRsyncArgs(args []string, readOnly bool) (rsyncRequest, error) {
	var r rsyncRequest
	if len(args) == 0 || args[0] != "--server" {
		return r, errors.New("rsync: only `rsync --server ...` (what an rsync client runs over ssh) is served")
	}
	dot := -1
	for i := 1; i < len(args) && dot < 0; i++ {
		a := args[i]
		name, _, _ := strings.Cut(a, "=")
		switch {
		case a == ".":
			dot = i
		case a == "--sender":
			r.sender = true
		case containsWord(rsyncRefused, name):
			return r, fmt.Errorf("rsync: %s is not supported by termgate's rsync server", name)
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(shortFlags(a), "szc"):
			return r, fmt.Errorf("rsync: %s is not supported by termgate's rsync server (-s: --protect-args, -z: --compress, -c: --checksum); run without it", a)
		case strings.HasPrefix(name, "--compress") || name == "--zc" || name == "--zl" || name == "--new-compress" || name == "--old-compress":
			return r, fmt.Errorf("rsync: %s: termgate's rsync server does not compress; run without -z (ssh -C compresses the connection)", name)
		case containsWord(rsyncDeletesSent, name) && readOnly:
			return r, fmt.Errorf("rsync: %s deletes files; this credential may only download", name)
		case rsyncValueOpts[a]:
			i++ // its value
		}
	}
	if dot < 0 {
		return r, errors.New("rsync: the server command line has no \".\" before its paths")
	}
	if readOnly && !r.sender {
		return r, errors.New("rsync: this credential may only download (files=\"download\")")
	}
	r.opts, r.paths = args[:dot], args[dot+1:]
	if len(r.paths) == 0 {
		return r, errors.New("rsync: no path")
	}
	return r, nil
}

// shortFlags is a bundle of short options ("-vlogDtpre.iLsfxC") without
// the value of its -e (the protocol's capability letters, which include
// an s of their own).
func shortFlags(a string) string {
	f, _, _ := strings.Cut(a[1:], "e")
	return f
}

func containsWord(list []string, w string) bool {
	for _, x := range list {
		if x == w {
			return true
		}
	}
	return false
}

// rsyncCmd is "rsync [--login LOGIN] [--read-only] -- ARGS...".
func rsyncCmd(args []string, in io.Reader, out io.Writer) error {
	readOnly := false
	for len(args) > 0 && args[0] != "--" {
		switch {
		case len(args) >= 2 && args[0] == "--login":
			if _, err := becomeLogin(args[1]); err != nil {
				return err
			}
			args = args[2:]
		case args[0] == "--read-only":
			readOnly, args = true, args[1:]
		default:
			usage()
		}
	}
	if len(args) == 0 {
		usage()
	}
	req, err := parseRsyncArgs(args[1:], readOnly)
	if err != nil {
		return err
	}
	dir := workDir()
	// Relative paths are the home's, as over OpenSSH: made absolute here,
	// since a sender joins its paths to its root ("/").
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("rsync: %w", err)
	}
	paths := make([]string, len(req.paths))
	for i, p := range req.paths {
		paths[i] = absFrom(dir, p)
	}
	// Its logs (a line per step) would only fill the exec's stderr: what
	// fails reaches the client in the protocol (MSG_ERROR) and as our
	// error.
	quiet := log.New(io.Discard, "", 0)
	srv, err := rsyncd.NewServer(nil, rsyncd.WithLogger(quiet), rsyncd.WithStderr(io.Discard))
	if err != nil {
		return err
	}
	if _, err := io.WriteString(out, holder.ToolReady+"\n"); err != nil {
		return err
	}
	argv := append(append([]string{}, req.opts...), ".")
	argv = append(argv, paths...)
	if req.sender {
		if err := srv.HandleConnArgs(context.Background(), rsyncd.NewConnection(in, out, "termgate"), nil, argv); err != nil {
			return fmt.Errorf("rsync: %w", err)
		}
		return nil
	}
	fo := parseFlistOpts(req.opts)
	list, lerr := readReceiverList(in, out, fo)
	prefix, dest := list.raw, paths[0]
	if lerr == nil {
		if os.Geteuid() != 0 {
			list.ownAs(uint32(os.Geteuid()), uint32(os.Getegid()))
		}
		prefix, dest = list.localName(dest)
	}
	argv = append(append(append([]string{}, req.opts...), "."), dest)
	var w io.Writer = out
	if list.greeted {
		w = &dropGreeting{w: out, want: rsyncGreeting}
	}
	err = srv.HandleConnArgs(context.Background(), rsyncd.NewConnection(io.MultiReader(bytes.NewReader(prefix), in), w, "termgate"), nil, argv)
	if err != nil {
		return fmt.Errorf("rsync: %w", err)
	}
	if lerr != nil { // the files are in; only the directories' metadata is not
		return fmt.Errorf("rsync: the directories' modes and times were not set: reading the file list: %w", lerr)
	}
	if err := touchUpDirs(dest, list.dirs, fo); err != nil {
		return fmt.Errorf("rsync: setting the directories' modes and times: %w", err)
	}
	return nil
}

// absFrom is p made absolute from dir, a trailing slash kept (it means
// "the directory's contents" to rsync).
func absFrom(dir, p string) string {
	if p == "~" {
		return dir
	}
	p = strings.TrimPrefix(p, "~/")
	if path.IsAbs(p) {
		return p
	}
	a := path.Join(dir, p)
	if strings.HasSuffix(p, "/") || p == "" || p == "." {
		a += "/"
	}
	return a
}
