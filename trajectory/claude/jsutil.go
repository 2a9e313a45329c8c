package claude

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Helpers that reproduce JavaScript semantics where Claude Code's output
// depends on them and Claude Code differs from the other agents (jsstr holds
// the shared ones): JSON.stringify of any value, Number.prototype.toFixed
// for its size format, its path collation and its UTF-8 decoding.

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

// jsonString encodes s as a JSON string the way JSON.stringify does. It
// goes through marshalJS rather than jsstr.AppendQuote because the two
// differ on invalid UTF-8 (the escape \ufffd here, the raw character
// there), and Claude's output has always used this form.
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

// validUTF8 decodes b as Node's utf8 decoding does, one U+FFFD for each
// byte that does not start a valid sequence. This is not jsstr.Decode
// (one U+FFFD per maximal ill-formed subsequence): "\xe2\x82" gives two
// U+FFFD here and one there, so sharing it would change what a rebuilt
// Claude session shows for such bytes.
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
