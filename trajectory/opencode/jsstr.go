package opencode

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// OpenCode runs on Bun: its strings are UTF-16, its limits count UTF-16
// code units, and its text comes through TextDecoder. These helpers give Go
// strings the same semantics where an observation depends on them.

// jsLen is String.prototype.length: UTF-16 code units.
func jsLen(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// jsPrefix returns the first n UTF-16 code units of s. A surrogate pair cut
// in half is dropped whole, as JSON cannot carry the lone half anyway.
func jsPrefix(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}

// jsSuffix returns the last n UTF-16 code units of s (a split pair is
// dropped whole).
func jsSuffix(s string, n int) string {
	units := 0
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return s[i:]
		}
		units += w
		i -= size
	}
	return s
}

// decodeText is TextDecoder("utf-8") with its default replacement: each
// maximal ill-formed subsequence becomes one U+FFFD (WHATWG), unlike
// strings.ToValidUTF8, which folds a whole run into one.
func decodeText(b []byte) string {
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

// dropPartialRune removes continuation bytes at the start of a byte tail
// that was cut in the middle of a character.
func dropPartialRune(b []byte) []byte {
	for k := 0; k < 3 && len(b) > 0 && b[0]&0xC0 == 0x80; k++ {
		b = b[1:]
	}
	return b
}

// isJSSpace is the WhiteSpace and LineTerminator set of String.prototype.trim.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func jsTrim(s string) string    { return strings.TrimFunc(s, isJSSpace) }
func jsTrimEnd(s string) string { return strings.TrimRightFunc(s, isJSSpace) }

// jsSplitLines is Effect's Stream.splitLines over a whole text: lines end
// at "\n" or "\r\n" (a lone "\r" stays in the line), and a final empty line
// is not emitted, so "a\n" is one line and "" none.
func jsSplitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, strings.TrimSuffix(s[:i], "\r"))
		s = s[i+1:]
	}
	return out
}

// stringifyJS writes v as JSON.stringify(v, null, indent) would: keys in
// their order, only the characters JSON requires escaped, numbers in their
// shortest form. indent 0 is the compact form.
func stringifyJS(buf *bytes.Buffer, v gjson.Result, indent, depth int) {
	nl := func(d int) {
		if indent > 0 {
			buf.WriteByte('\n')
			buf.WriteString(strings.Repeat(" ", indent*d))
		}
	}
	switch {
	case v.IsObject():
		n := 0
		buf.WriteByte('{')
		v.ForEach(func(k, e gjson.Result) bool {
			if n > 0 {
				buf.WriteByte(',')
			}
			nl(depth + 1)
			writeJSString(buf, k.Str)
			buf.WriteByte(':')
			if indent > 0 {
				buf.WriteByte(' ')
			}
			stringifyJS(buf, e, indent, depth+1)
			n++
			return true
		})
		if n > 0 {
			nl(depth)
		}
		buf.WriteByte('}')
	case v.IsArray():
		n := 0
		buf.WriteByte('[')
		v.ForEach(func(_, e gjson.Result) bool {
			if n > 0 {
				buf.WriteByte(',')
			}
			nl(depth + 1)
			stringifyJS(buf, e, indent, depth+1)
			n++
			return true
		})
		if n > 0 {
			nl(depth)
		}
		buf.WriteByte(']')
	case v.Type == gjson.String:
		writeJSString(buf, v.Str)
	case v.Type == gjson.Number:
		buf.WriteString(jsNumber(v.Num))
	case v.Type == gjson.True:
		buf.WriteString("true")
	case v.Type == gjson.False:
		buf.WriteString("false")
	default:
		buf.WriteString("null")
	}
}

// jsNumber formats f as Number.prototype.toString does for the usual range.
func jsNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	abs := f
	if abs < 0 {
		abs = -abs
	}
	if abs >= 1e21 || abs < 1e-6 {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		s = strings.Replace(s, "e-0", "e-", 1)
		return strings.Replace(s, "e+0", "e+", 1)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// writeJSString quotes s like JSON.stringify: `"`, `\` and control
// characters are escaped (with \b \f \n \r \t where they exist), everything
// else, U+2028 included, is written as is.
func writeJSString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			if r < 0x20 {
				buf.WriteString(`\u00`)
				buf.WriteByte("0123456789abcdef"[r>>4])
				buf.WriteByte("0123456789abcdef"[r&0xF])
				continue
			}
			buf.WriteRune(r)
		}
	}
	buf.WriteByte('"')
}

// jsonString is writeJSString into a new slice.
func jsonString(s string) []byte {
	var b bytes.Buffer
	writeJSString(&b, s)
	return b.Bytes()
}

// localeCompare approximates String.prototype.localeCompare under the root
// collation Bun's ICU uses: whitespace and punctuation sort before digits,
// digits before letters, letters compare case-insensitively first, and only
// then lower case sorts before upper case. It is exact for the ASCII file
// names a directory listing usually holds.
func localeCompare(a, b string) int {
	if c := collate(a, b, false); c != 0 {
		return c
	}
	if c := collate(a, b, true); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func collate(a, b string, tertiary bool) int {
	ra, rb := []rune(a), []rune(b)
	for i := 0; i < len(ra) && i < len(rb); i++ {
		ka, kb := collationKey(ra[i], tertiary), collationKey(rb[i], tertiary)
		if ka != kb {
			if ka < kb {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(ra) < len(rb):
		return -1
	case len(ra) > len(rb):
		return 1
	}
	return 0
}

// punctOrder is the root collation order of ASCII punctuation and symbols.
const punctOrder = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"

func collationKey(r rune, tertiary bool) int {
	if i := strings.IndexRune(punctOrder, r); i >= 0 {
		return 1 + i
	}
	switch {
	case r >= '0' && r <= '9':
		return 100 + int(r-'0')
	case unicode.IsLetter(r):
		l := unicode.ToLower(r)
		key := 1000 + int(l)*4
		if tertiary && unicode.IsUpper(r) {
			key += 2
		}
		if l > 'z' {
			key = 1000 + int(foldAccent(l))*4 + 1
			if tertiary && unicode.IsUpper(r) {
				key += 2
			}
		}
		return key
	case r < 0x80:
		return 60 + int(r)%40
	}
	return 1000 + int(r)*4
}

// foldAccent maps common Latin letters with diacritics to their base letter
// so that "é" sorts next to "e".
func foldAccent(r rune) rune {
	const from = "àáâãäåçèéêëìíîïñòóôõöùúûüýÿ"
	const to = "aaaaaaceeeeiiiinooooouuuuyy"
	fr, tr := []rune(from), []rune(to)
	for i, c := range fr {
		if c == r {
			return tr[i]
		}
	}
	return r
}

// utf16Units is used where OpenCode compares string lengths (edit's
// Levenshtein works on code units).
func utf16Units(s string) []uint16 { return utf16.Encode([]rune(s)) }
