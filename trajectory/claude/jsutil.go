package claude

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Helpers that reproduce JavaScript string semantics where Claude Code's
// output depends on them: String.prototype.trim's whitespace set, lengths
// and slices in UTF-16 code units, JSON.stringify's encoding, and
// Number.prototype.toFixed for sizes.

// isJSSpace reports whether r is whitespace for JavaScript's trim and \s.
func isJSSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

func jsTrim(s string) string    { return strings.TrimFunc(s, isJSSpace) }
func jsTrimEnd(s string) string { return strings.TrimRightFunc(s, isJSSpace) }

// jsLen is s.length in JavaScript: UTF-16 code units.
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

// jsSlice is s.slice(0, n) in UTF-16 code units; a surrogate pair cut in
// half loses its high half, as Node would leave a lone surrogate there that
// JSON encoding turns into U+FFFD-free escapes we cannot represent in Go.
func jsSlice(s string, n int) string {
	if n <= 0 {
		return ""
	}
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

// jsSliceFrom is s.slice(n) in UTF-16 code units.
func jsSliceFrom(s string, n int) string {
	units := 0
	for i, r := range s {
		if units >= n {
			return s[i:]
		}
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	return ""
}

// jsToFixed1 is x.toFixed(1).replace(/\.0$/, "").
func jsToFixed1(x float64) string {
	s := strconv.FormatFloat(math.Round(x*10)/10, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// jsSize is Claude Code's byte-size formatting ("512 bytes", "1.5KB", "2MB").
func jsSize(n int) string {
	kb := float64(n) / 1024
	if kb < 1 {
		return strconv.Itoa(n) + " bytes"
	}
	if kb < 1024 {
		return jsToFixed1(kb) + "KB"
	}
	mb := kb / 1024
	if mb < 1024 {
		return jsToFixed1(mb) + "MB"
	}
	return jsToFixed1(mb/1024) + "GB"
}

// marshalJS encodes v as JSON.stringify would: no HTML escaping, and the
// line and paragraph separators left as they are.
func marshalJS(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
	out = bytes.ReplaceAll(out, []byte(`\u2028`), []byte("\u2028"))
	out = bytes.ReplaceAll(out, []byte(`\u2029`), []byte("\u2029"))
	return out, nil
}

// jsonString encodes s as a JSON string the way JSON.stringify does.
func jsonString(s string) []byte {
	b, _ := marshalJS(s)
	return b
}

// localeLess approximates String.prototype.localeCompare for file paths
// (ICU root collation): case is compared only when everything else ties.
func localeLess(a, b string) bool {
	la, lb := strings.ToLower(a), strings.ToLower(b)
	if la != lb {
		return la < lb
	}
	return a > b // lower case sorts before upper case
}

// utf16Units converts s for places that index by UTF-16 unit.
func utf16Units(s string) []uint16 { return utf16.Encode([]rune(s)) }

// validUTF8 decodes b as Node's utf8 decoding does, one U+FFFD for each
// byte that does not start a valid sequence.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		sb.WriteRune(r) // utf8.RuneError for an invalid byte
		b = b[n:]
	}
	return sb.String()
}
