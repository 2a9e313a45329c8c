package jsonl

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// valid reports whether b is exactly one JSON value (with surrounding
// whitespace) whose strings are valid UTF-8. It exists because validation
// dominates decoding time: most bytes of a session file sit inside long
// string values (tool outputs). One word-at-a-time pass over the line tells
// whether it holds any non-ASCII or control byte; a line without control
// bytes (what every JSON encoder writes) has its strings scanned for their
// closing quote and escapes with bytes.IndexByte, which runs many bytes per
// step, and only other lines take the byte-checking scanner.
func valid(b []byte) bool {
	ascii, ctrl := classify(b)
	if !ascii && !utf8.Valid(b) {
		return false
	}
	sc := str
	if !ctrl {
		sc = strNoControl
	}
	i := skipSpace(b, 0)
	i, ok := value(b, i, 0, sc)
	if !ok {
		return false
	}
	return skipSpace(b, i) == len(b)
}

// classify reports whether b is all ASCII and whether it has a byte below
// 0x20, eight bytes a step (the "has a byte less than n" bit trick, exact as
// to existence).
func classify(b []byte) (ascii, ctrl bool) {
	var hi, lo uint64
	i := 0
	for ; i+16 <= len(b); i += 16 {
		w := binary.LittleEndian.Uint64(b[i:])
		v := binary.LittleEndian.Uint64(b[i+8:])
		hi |= w | v
		lo |= (w - ones*0x20) & ^w
		lo |= (v - ones*0x20) & ^v
	}
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		hi |= w
		lo |= (w - ones*0x20) & ^w
	}
	ctrl = lo&highs != 0
	ascii = hi&highs == 0
	for ; i < len(b); i++ {
		ctrl = ctrl || b[i] < 0x20
		ascii = ascii && b[i] < 0x80
	}
	return ascii, ctrl
}

// scanner scans a string body starting just after its opening quote.
type scanner func(b []byte, i int) (int, bool)

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 1000

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func value(b []byte, i, depth int, sc scanner) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return sc(b, i+1)
	case c == '{':
		return object(b, i+1, depth+1, sc)
	case c == '[':
		return array(b, i+1, depth+1, sc)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return number(b, i)
	}
	return i, false
}

func object(b []byte, i, depth int, sc scanner) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	i = skipSpace(b, i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		var ok bool
		if i, ok = sc(b, i+1); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = skipSpace(b, i+1)
		if i, ok = value(b, i, depth, sc); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func array(b []byte, i, depth int, sc scanner) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	i = skipSpace(b, i)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = value(b, i, depth, sc); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain reports whether none of the eight bytes in w needs attention inside
// a string: no quote, no backslash, no control character (UTF-8 was checked
// for the whole line already, so bytes at or above 0x80 are plain).
// Each test is the classic "has a zero byte" bit trick; they are exact as
// to whether such a byte exists, which is all the fast path needs.
func plain(w uint64) bool {
	quote := w ^ (ones * '"')
	slash := w ^ (ones * '\\')
	special := (quote - ones) & ^quote
	special |= (slash - ones) & ^slash
	special |= (w - ones*0x20) & ^w // bytes below 0x20
	return special&highs == 0
}

// str scans a string body starting just after its opening quote.
func str(b []byte, i int) (int, bool) {
	for {
		for i+8 <= len(b) && plain(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return i, false
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			n, ok := escape(b, i)
			if !ok {
				return i, false
			}
			i += n
		case c < 0x20:
			return i, false
		default:
			i++
		}
	}
}

// strNoControl is str for a line known to hold no control byte: only quotes
// and backslashes need attention. Most strings of a session are short (keys,
// ids, types), so the first words are checked eight bytes at a time, exactly
// locating the first quote or backslash; a string still going on after them
// is searched with IndexByte, which runs many bytes per step. Each byte is
// searched once: the quote search restarts only past an escaped quote.
func strNoControl(b []byte, i int) (int, bool) {
	for k := 0; k < 4 && i+8 <= len(b); k++ {
		w := binary.LittleEndian.Uint64(b[i:])
		q, s := w^(ones*'"'), w^(ones*'\\')
		m := ((q-ones)&^q | (s-ones)&^s) & highs
		if m == 0 {
			i += 8
			continue
		}
		// The lowest flagged byte is always a real match.
		i += bits.TrailingZeros64(m) >> 3
		if b[i] == '"' {
			return i + 1, true
		}
		n, ok := escape(b, i)
		if !ok {
			return i, false
		}
		i += n
	}
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b), false
		}
		end := i + q
		for i < end {
			k := bytes.IndexByte(b[i:end], '\\')
			if k < 0 {
				return end + 1, true
			}
			i += k
			n, ok := escape(b, i)
			if !ok {
				return i, false
			}
			i += n
		}
		if i == end {
			return end + 1, true
		}
		// The quote at end was escaped; the string goes on after it.
	}
}

// escape checks the escape sequence at b[i] (a backslash) and returns its
// length.
func escape(b []byte, i int) (int, bool) {
	if i+1 >= len(b) {
		return 0, false
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
		if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
			return 0, false
		}
		return 6, true
	}
	return 0, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return i, false
		}
	}
	return i, true
}
