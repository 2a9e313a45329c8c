package opencode

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// OpenCode runs on Bun: its strings are UTF-16, its limits count UTF-16
// code units, and its text comes through TextDecoder. jsstr holds the
// semantics the agents share; what is OpenCode's own (Effect's line
// splitting, its collation approximation) stays here.

// dropPartialRune removes continuation bytes at the start of a byte tail
// that was cut in the middle of a character.
func dropPartialRune(b []byte) []byte {
	for k := 0; k < 3 && len(b) > 0 && b[0]&0xC0 == 0x80; k++ {
		b = b[1:]
	}
	return b
}

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

// writeJSString quotes s like JSON.stringify (see jsstr.AppendQuote).
func writeJSString(buf *bytes.Buffer, s string) {
	buf.Write(jsstr.AppendQuote(buf.AvailableBuffer(), s))
}

// jsonString is writeJSString into a new slice.
func jsonString(s string) []byte { return jsstr.AppendQuote(nil, s) }

// jsNumber is jsstr.Number except for ±Inf, which reaches it only from a
// JSON number too large for float64 (gjson reads 1e999 as +Inf). It has
// always printed Go's "+Inf"/"-Inf" there; jsstr.Number would print
// JavaScript's "Infinity", and Bun's JSON.stringify would print null, so the
// old text is kept until that case is decided on purpose.
func jsNumber(f float64) string {
	if math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	return jsstr.Number(f)
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
