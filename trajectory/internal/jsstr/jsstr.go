// Package jsstr gives Go strings the JavaScript string semantics that the
// Node- and Bun-based agents' observable output depends on: lengths and
// slices in UTF-16 code units, String.prototype.trim's whitespace set,
// WHATWG UTF-8 decoding, and JSON.stringify's string and number encoding.
//
// Each agent package keeps its own deliberate deviations (Claude Code's
// per-byte replacement decoding, each agent's size formatting and collation)
// next to the code that needs them; only behaviour the agents share lives
// here.
package jsstr

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// IsSpace reports whether r is in the WhiteSpace and LineTerminator set of
// String.prototype.trim and the regular expression \s.
func IsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// Trim is String.prototype.trim.
func Trim(s string) string { return strings.TrimFunc(s, IsSpace) }

// TrimEnd is String.prototype.trimEnd.
func TrimEnd(s string) string { return strings.TrimRightFunc(s, IsSpace) }

// unitWidth is how many UTF-16 code units r takes.
func unitWidth(r rune) int {
	if r > 0xFFFF {
		return 2
	}
	return 1
}

// Len is String.prototype.length: UTF-16 code units.
func Len(s string) int {
	n := 0
	for _, r := range s {
		n += unitWidth(r)
	}
	return n
}

// Prefix is s.slice(0, n) in UTF-16 code units. A surrogate pair cut in
// half is dropped whole: JavaScript would keep the lone high surrogate,
// which a Go string (and the JSON the agents write) cannot carry as is.
func Prefix(s string, n int) string {
	units := 0
	for i, r := range s {
		w := unitWidth(r)
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}

// SliceFrom is s.slice(n) in UTF-16 code units. A character that starts
// before unit n is dropped whole.
func SliceFrom(s string, n int) string {
	units := 0
	for i, r := range s {
		if units >= n {
			return s[i:]
		}
		units += unitWidth(r)
	}
	return ""
}

// Suffix is s.slice(-n) for n > 0: the last n UTF-16 code units, a split
// surrogate pair dropped whole.
func Suffix(s string, n int) string {
	units := 0
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		w := unitWidth(r)
		if units+w > n {
			return s[i:]
		}
		units += w
		i -= size
	}
	return s
}

// UTF16Units converts s for code that indexes by UTF-16 code unit.
func UTF16Units(s string) []uint16 { return utf16.Encode([]rune(s)) }

// Decode is TextDecoder("utf-8") and Buffer.toString("utf-8") (the WHATWG
// decoder) without BOM handling: each maximal ill-formed subsequence becomes
// one U+FFFD, unlike strings.ToValidUTF8, which folds a whole run into one.
func Decode(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[i : i+size])
			i += size
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return sb.String()
}

// maximalSubpart is the length of the ill-formed prefix of b that WHATWG
// replaces with a single U+FFFD: a lead byte plus the continuation bytes that
// were valid for it before the sequence broke off.
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}

// AppendQuote appends s as JSON.stringify writes a string: only '"', '\\'
// and control characters are escaped (\b \f \n \r \t by name, the rest as
// lower-case \u00xx); '<', '>', '&', U+2028 and U+2029 stay as they are,
// unlike encoding/json. An invalid byte is written as U+FFFD.
func AppendQuote(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			if c < utf8.RuneSelf {
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\ufffd"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Number is Number.prototype.toString for a float: integers without a
// fraction, the shortest round-trip decimal, and exponent notation
// ("1e+21", "1e-7") outside 1e-6 <= |v| < 1e21.
func Number(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		return "0"
	}
	if a := math.Abs(v); a >= 1e21 || a < 1e-6 {
		s := strconv.FormatFloat(v, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		return mant + "e" + exp[:1] + strings.TrimLeft(exp[1:], "0")
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
