package record

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// CopyWithoutInput copies a recording from r to w without its input: the
// header line and the output, resize and marker events ("o", "r", "m")
// pass; "i" events, and any line that is not an event of those kinds, do
// not. Input holds what writers typed at prompts that do not echo
// (passwords): it is for credentials that may type into the instance,
// never for observers (issue 18, L2). Lines of any length are copied
// without holding one whole in memory.
func CopyWithoutInput(w io.Writer, r io.Reader) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	first, start, keep := true, true, false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if start {
				// The start of a line: its kind is in its first bytes,
				// which ReadSlice always returns together.
				keep = first || keptEvent(chunk)
				first = false
			}
			if keep {
				if _, werr := bw.Write(chunk); werr != nil {
					return cw.n, werr
				}
			}
			start = chunk[len(chunk)-1] == '\n'
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			err := bw.Flush()
			return cw.n, err
		default:
			return cw.n, err
		}
	}
}

// keptEvent reports whether line starts as an event that is not input:
// `[TIME, "K", ...` with K one of o, r, m.
func keptEvent(line []byte) bool {
	if len(line) == 0 || line[0] != '[' {
		return false
	}
	i := bytes.IndexByte(line, ',')
	if i < 0 {
		return false
	}
	rest := bytes.TrimLeft(line[i+1:], " \t")
	if len(rest) < 3 || rest[0] != '"' || rest[2] != '"' {
		return false
	}
	switch rest[1] {
	case 'o', 'r', 'm':
		return true
	}
	return false
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
