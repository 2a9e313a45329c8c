// Package rawjson walks JSON that is already known to be valid (a line the
// jsonl reader yielded) faster than gjson does, with gjson's results: the
// decoders keep reading gjson.Result values, but the members they step over
// cost a few vector-speed searches instead of a byte-at-a-time scan. Most of
// a session's bytes sit in long strings (tool outputs) that a decoder only
// skips; gjson walks every byte of every value it passes, once per level of
// nesting it is asked about.
//
// Each is only for valid JSON. On anything else it stays within bounds and
// stops, but what it yielded before stopping may differ from gjson's.
package rawjson

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Each is t.ForEach(fn) for a t whose raw text is valid JSON: the same keys
// and values (Type, Raw, Str, Num and Index alike) in the same order.
func Each(t gjson.Result, fn func(k, v gjson.Result) bool) {
	if t.Type != gjson.JSON || t.Indexes != nil {
		t.ForEach(fn)
		return
	}
	each(t, nil, nil, fn)
}

// EachOf is Each calling fn only for the members of object t named in keys;
// the others are stepped over without their strings being unescaped (a
// decoder that switches on a few keys never needs them). On an array or a
// scalar it is Each.
func EachOf(t gjson.Result, keys []string, fn func(k, v gjson.Result) bool) {
	if t.Type != gjson.JSON || t.Indexes != nil {
		t.ForEach(fn)
		return
	}
	each(t, keys, nil, fn)
}

// EachOfNested is EachOf that also walks the member named inner, when it is
// an object, where it lies: innerFn gets that object's members named in
// innerKeys (as EachOf would give them), then fn gets the member whole.
// Stepping over a nested object to find its end and then walking it would
// read its (often long) strings twice; this reads them once. inner must be
// one of keys.
func EachOfNested(t gjson.Result, keys []string, inner string, innerKeys []string, fn, innerFn func(k, v gjson.Result) bool) {
	in := &nest{key: inner, keys: innerKeys, fn: innerFn}
	if t.Type != gjson.JSON || t.Indexes != nil {
		t.ForEach(func(k, v gjson.Result) bool {
			if k.Type == gjson.String && k.Str == inner && v.IsObject() {
				EachOf(v, innerKeys, innerFn)
			}
			return fn(k, v)
		})
		return
	}
	each(t, keys, in, fn)
}

// nest is a member each walks in place rather than steps over.
type nest struct {
	key  string
	keys []string
	fn   func(k, v gjson.Result) bool
}

// each walks the object or array at the start of t.Raw and returns the
// offset just past its closing bracket, or -1 when it stopped early. t.Raw
// may go on after the value (a nested walk's does).
func each(t gjson.Result, keys []string, in *nest, fn func(k, v gjson.Result) bool) int {
	s := t.Raw
	i := skipSpace(s, 0)
	if i >= len(s) || (s[i] != '{' && s[i] != '[') {
		return -1
	}
	obj := s[i] == '{'
	closer := byte(']')
	var key gjson.Result
	if obj {
		key.Type, closer = gjson.String, '}'
	} else {
		key.Type, key.Num = gjson.Number, -1
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == closer {
		return i + 1
	}
	for i < len(s) {
		if obj {
			if s[i] != '"' {
				return -1
			}
			end, esc := stringEnd(s, i+1)
			if end < 0 {
				return -1
			}
			key.Raw, key.Str, key.Index = s[i:end], body(s[i+1:end-1], esc), i+t.Index
			i = skipSpace(s, end)
			if i >= len(s) || s[i] != ':' {
				return -1
			}
			i = skipSpace(s, i+1)
			if keys != nil && !slices.Contains(keys, key.Str) {
				if i = skipValue(s, i); i < 0 {
					return -1
				}
				if i = skipSpace(s, i); i < len(s) && s[i] == closer {
					return i + 1
				}
				if i >= len(s) || s[i] != ',' {
					return -1
				}
				i = skipSpace(s, i+1)
				continue
			}
		} else {
			key.Num++
		}
		var v gjson.Result
		var end int
		if obj && in != nil && key.Str == in.key && i < len(s) && s[i] == '{' {
			end = i + each(gjson.Result{Type: gjson.JSON, Raw: s[i:], Index: i + t.Index}, in.keys, nil, in.fn)
			if end < i {
				// innerFn stopped early: find the end the plain way.
				end = skipNested(s, i)
			}
			if end >= i {
				v.Type, v.Raw = gjson.JSON, s[i:end]
			}
		} else {
			v, end = value(s, i)
		}
		if end < 0 {
			return -1
		}
		v.Index = i + t.Index
		if !fn(key, v) {
			return -1
		}
		if i = skipSpace(s, end); i < len(s) && s[i] == closer {
			return i + 1
		}
		if i >= len(s) || s[i] != ',' {
			return -1
		}
		i = skipSpace(s, i+1)
	}
	return -1
}

// value reads the value starting at s[i] and returns it (without Index)
// and the offset just past it, or -1.
func value(s string, i int) (gjson.Result, int) {
	var v gjson.Result
	if i >= len(s) {
		return v, -1
	}
	switch c := s[i]; {
	case c == '"':
		end, esc := stringEnd(s, i+1)
		if end < 0 {
			return v, -1
		}
		v.Type, v.Raw, v.Str = gjson.String, s[i:end], body(s[i+1:end-1], esc)
		return v, end
	case c == '{' || c == '[':
		end := skipNested(s, i)
		if end < 0 {
			return v, -1
		}
		v.Type, v.Raw = gjson.JSON, s[i:end]
		return v, end
	case c >= 'a' && c <= 'z':
		end := i + 1
		for end < len(s) && s[end] >= 'a' && s[end] <= 'z' {
			end++
		}
		v.Raw = s[i:end]
		switch c {
		case 't':
			v.Type = gjson.True
		case 'f':
			v.Type = gjson.False
		}
		return v, end
	case c == '-' || (c >= '0' && c <= '9'):
		end := i + 1
		for end < len(s) && s[end] > ' ' && s[end] != ',' && s[end] != ']' && s[end] != '}' {
			end++
		}
		v.Type, v.Raw = gjson.Number, s[i:end]
		v.Num, _ = strconv.ParseFloat(v.Raw, 64)
		return v, end
	}
	return v, -1
}

// skipValue returns the offset just past the value starting at s[i], or -1,
// reading no more of it than its extent.
func skipValue(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch c := s[i]; {
	case c == '"':
		return skipString(s, i+1)
	case c == '{' || c == '[':
		return skipNested(s, i)
	case c >= 'a' && c <= 'z', c == '-', c >= '0' && c <= '9':
		end := i + 1
		for end < len(s) && s[end] > ' ' && s[end] != ',' && s[end] != ']' && s[end] != '}' {
			end++
		}
		return end
	}
	return -1
}

// stringEnd returns the offset just past the closing quote of the string
// whose body starts at s[i], and whether the body holds a backslash; -1 when
// the string does not end.
func stringEnd(s string, i int) (int, bool) {
	end := skipString(s, i)
	if end < 0 {
		return -1, false
	}
	return end, strings.IndexByte(s[i:end-1], '\\') >= 0
}

// skipString is stringEnd without the backslash question.
func skipString(s string, i int) int {
	for {
		q := quote(s, i)
		if q < 0 {
			return -1
		}
		// A quote preceded by an odd run of backslashes is escaped.
		n := 0
		for n < q-i && s[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}

// quote is the offset of the first '"' in s[i:], or -1. Keys and ids are
// short: a byte loop finds their end before a vector search would have
// started, and only a longer string takes IndexByte.
func quote(s string, i int) int {
	for lim := min(len(s), i+16); i < lim; i++ {
		if s[i] == '"' {
			return i
		}
	}
	if k := strings.IndexByte(s[i:], '"'); k >= 0 {
		return i + k
	}
	return -1
}

// skipNested returns the offset just past the object or array starting at
// s[i], or -1. Between strings only structure is left, which is short.
func skipNested(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '"':
			end := skipString(s, i+1)
			if end < 0 {
				return -1
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// body is a string's value: b itself without escapes, else unescaped the
// way gjson does (a lone surrogate becomes U+FFFD; a high surrogate followed
// by a low one is one character).
func body(b string, esc bool) string {
	if !esc {
		return b
	}
	out := make([]byte, 0, len(b))
	for {
		k := strings.IndexByte(b, '\\')
		if k < 0 || k+1 >= len(b) {
			if k < 0 {
				out = append(out, b...)
			}
			return string(out)
		}
		out = append(out, b[:k]...)
		c := b[k+1]
		b = b[k+2:]
		switch c {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b)
			if !ok {
				return string(out)
			}
			b = b[4:]
			if r >= 0xD800 && r < 0xDC00 && len(b) >= 6 && b[0] == '\\' && b[1] == 'u' {
				if r2, ok := hex4(b[2:]); ok && r2 >= 0xDC00 && r2 < 0xE000 {
					r = utf16.DecodeRune(r, r2)
					b = b[6:]
				}
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, c)
		}
	}
}

func hex4(b string) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(b[:4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
