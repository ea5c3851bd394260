package sshd

import (
	"errors"
	"fmt"
	"strings"
)

// rsync's remote command: what an rsync client asks its remote shell to
// run (`rsync --server [--sender] OPTIONS . PATH...`), as one line that a
// POSIX shell would split. The gateway splits it itself, and refuses what
// only a shell could give meaning to (;, |, $, wildcards...): the words go
// to termgate's rsync server as they are, never to a shell.

// maxRsyncLine bounds the command line parsed (many paths are many words,
// but a client's line is far below this).
const maxRsyncLine = 64 << 10

// errNotRsync: the line is not an rsync server's; it runs as any command.
var errNotRsync = errors.New("not an rsync server command")

// rsyncRequest is a parsed rsync server command line.
type rsyncRequest struct {
	args    []string // the words after "rsync"
	sender  bool     // --sender: the instance sends (a download)
	deletes bool     // --remove-source-files: the sender deletes what it sent
	paths   []string // after the "."
}

// isRsyncServer says whether line starts as an rsync client's remote
// command does: the word rsync, then --server.
func isRsyncServer(line string) bool {
	f := strings.Fields(line)
	return len(f) >= 2 && f[0] == "rsync" && f[1] == "--server"
}

// parseRsyncLine splits an rsync server command line into its words and
// checks them: errNotRsync for any other line, another error (what the
// client reads) for a server line termgate does not run.
func parseRsyncLine(line string) (rsyncRequest, error) {
	var r rsyncRequest
	if !isRsyncServer(line) {
		return r, errNotRsync
	}
	if len(line) > maxRsyncLine {
		return r, fmt.Errorf("rsync: the command line is over %d bytes", maxRsyncLine)
	}
	words, err := splitWords(line)
	if err != nil {
		return r, err
	}
	r.args = words[1:]
	dot := -1
	for i := 1; i < len(r.args) && dot < 0; i++ {
		a := r.args[i]
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case ".":
			dot = i
		case "--sender":
			r.sender = true
		case "--daemon", "--config":
			return r, errors.New("rsync: daemon mode over ssh is not served; use rsync -e ssh with a path (INSTANCE@HOST:PATH)")
		case "--remove-source-files", "--remove-sent-files":
			r.deletes = true
		}
	}
	if dot < 0 || dot == len(r.args)-1 {
		return r, errors.New("rsync: the server command line has no path")
	}
	r.paths = r.args[dot+1:]
	return r, nil
}

// splitWords splits line as a POSIX shell splits a simple command's words:
// blanks separate words; a backslash quotes the next character; '...'
// quotes everything; "..." everything but \ before $ ` " \ and newline.
// What the shell would expand or act on unquoted ($, `, ;, &, |, <, >,
// (, ), wildcards, a leading #) is refused, so a line means the same here
// as it would to the shell rsync's client wrote it for.
func splitWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\\':
			i++
			if i == len(line) {
				return nil, errors.New("rsync: the command line ends in a backslash")
			}
			if line[i] != '\n' { // a line continuation is nothing
				w.WriteByte(line[i])
				inWord = true
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("rsync: unterminated ' in the command line")
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte("$`\"\\\n", line[i+1]) >= 0:
					i++
					if line[i] != '\n' {
						w.WriteByte(line[i])
					}
				case line[i] == '$' || line[i] == '`':
					return nil, fmt.Errorf("rsync: %q in the command line: termgate does not run a shell to expand it", line[i])
				default:
					w.WriteByte(line[i])
				}
			}
			if i == len(line) {
				return nil, errors.New("rsync: unterminated \" in the command line")
			}
			inWord = true
		case strings.IndexByte("$`;&|<>()", c) >= 0 || c == '#' && !inWord:
			return nil, fmt.Errorf("rsync: %q in the command line: termgate runs rsync without a shell; quote it", c)
		case strings.IndexByte("*?[", c) >= 0:
			return nil, fmt.Errorf("rsync: wildcard %q in a remote path: termgate's rsync server does not expand wildcards; name the files or directories", c)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
