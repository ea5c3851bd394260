package record

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// encoder turns events into asciicast v2 lines. It keeps the start of a
// UTF-8 character cut at the end of one output chunk for the next one.
type encoder struct {
	carry []byte // an incomplete UTF-8 sequence (at most 3 bytes)
	input bool   // writes "i" events instead of "o"
}

func (e *encoder) kind() byte {
	if e.input {
		return 'i'
	}
	return 'o'
}

// output appends the event line for chunk (nothing when all of chunk is
// carried over).
func (e *encoder) output(dst []byte, at time.Duration, chunk []byte) []byte {
	if len(e.carry) > 0 {
		chunk = append(e.carry, chunk...)
		e.carry = nil
	}
	// A lead byte among the last three whose sequence is not complete
	// yet waits for the next chunk; an invalid sequence does not.
	for i := len(chunk) - 1; i >= 0 && i >= len(chunk)-3; i-- {
		if utf8.RuneStart(chunk[i]) {
			if !utf8.FullRune(chunk[i:]) {
				e.carry = append([]byte(nil), chunk[i:]...)
				chunk = chunk[:i]
			}
			break
		}
	}
	if len(chunk) == 0 {
		return dst
	}
	return appendEvent(dst, at, e.kind(), chunk)
}

// flush appends what is carried over (as U+FFFD: the character never
// completed), at the end of the recording or before a gap of dropped output.
func (e *encoder) flush(dst []byte, at time.Duration) []byte {
	if len(e.carry) == 0 {
		return dst
	}
	c := e.carry
	e.carry = nil
	return appendEvent(dst, at, e.kind(), c)
}

// appendEvent appends `[SECONDS, "KIND", "DATA"]` and a newline.
func appendEvent(dst []byte, at time.Duration, kind byte, data []byte) []byte {
	dst = append(dst, '[')
	dst = strconv.AppendFloat(dst, at.Seconds(), 'f', 6, 64)
	dst = append(dst, ", \""...)
	dst = append(dst, kind)
	dst = append(dst, "\", "...)
	dst = appendString(dst, data)
	return append(dst, "]\n"...)
}

const hexDigits = "0123456789abcdef"

// appendString appends data as a JSON string: control characters, the
// quote and the backslash escaped, valid UTF-8 as it is, and every byte
// that is not valid UTF-8 as U+FFFD, so the result is always valid JSON.
func appendString(dst, data []byte) []byte {
	dst = append(dst, '"')
	start := 0 // data[start:i] is copied as it is
	for i := 0; i < len(data); {
		b := data[i]
		if b >= 0x20 && b != '"' && b != '\\' && b < utf8.RuneSelf {
			i++
			continue
		}
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(data[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, data[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		dst = append(dst, data[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, data[start:]...)
	return append(dst, '"')
}
