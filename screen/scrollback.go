package screen

import "bytes"

// scrollback holds the lines that scrolled off the top of the main screen,
// already rendered as the bytes that redraw them (each ends with "\r\n",
// or without it when it wraps into the next line). Keeping bytes rather
// than cells makes it about as large as the output it came from, and a
// snapshot copies it as it is.
type scrollback struct {
	buf   []byte
	head  int // bytes before head are dropped
	limit int // bytes kept at most
	lines int // lines held (for tests and metrics)
}

func (s *scrollback) add(b []byte, newline bool) {
	s.buf = append(s.buf, b...)
	if newline {
		s.buf = append(s.buf, '\r', '\n')
		s.lines++
	}
	if len(s.buf)-s.head <= s.limit {
		return
	}
	// Drop whole lines from the front: a rendered line holds no '\n' but
	// its end, so the first '\n' after the cut ends a line.
	cut := len(s.buf) - s.limit
	i := bytes.IndexByte(s.buf[cut:], '\n')
	if i < 0 {
		s.head = len(s.buf)
	} else {
		dropped := bytes.Count(s.buf[s.head:cut+i+1], []byte{'\n'})
		s.lines -= dropped
		s.head = cut + i + 1
	}
	if s.head > s.limit/4 { // compact often enough to stay near the limit
		n := copy(s.buf, s.buf[s.head:])
		s.buf = s.buf[:n]
		s.head = 0
	}
}

func (s *scrollback) bytes() []byte { return s.buf[s.head:] }

func (s *scrollback) reset() {
	s.buf, s.head, s.lines = nil, 0, 0
}
