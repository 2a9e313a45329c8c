// Package relocate moves a recorded session to another directory: every
// occurrence of the directory the agent recorded becomes the directory the
// replay runs in, in plain text and inside every string of a JSON document.
// A continued agent then sees one consistent world: the stored history, its
// environment and its tool arguments all name the sandbox it runs in.
package relocate

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Paths maps the directory From to To. Only whole paths are replaced: From
// must not continue into a longer file name (/w/repo does not match in
// /w/repo2 or /w/repo.tar) nor sit inside a longer path (/x/w/repo).
type Paths struct{ From, To string }

// Active reports whether there is anything to replace.
func (p Paths) Active() bool { return p.From != "" && p.From != p.To }

// Reverse maps To back to From; it maps nothing when From is unknown (a
// trajectory that records no cwd), instead of erasing To.
func (p Paths) Reverse() Paths {
	if p.From == "" {
		return Paths{}
	}
	return Paths{From: p.To, To: p.From}
}

// String replaces every whole-path occurrence of From in s.
func (p Paths) String(s string) string {
	if !p.Active() || !strings.Contains(s, p.From) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, p.From)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(p.From)
		if wholePath(s, i, end) {
			b.WriteString(s[:i])
			b.WriteString(p.To)
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

// wholePath: the match s[i:end] is not preceded by a path character and not
// followed by a file-name character (a '/' may follow: a path below it). Dots
// that end a sentence ("ran in /w/repo.") are punctuation, not a name.
func wholePath(s string, i, end int) bool {
	if i > 0 {
		if c := s[i-1]; c == '/' || nameChar(c) {
			return false
		}
	}
	for end < len(s) && s[end] == '.' {
		end++
	}
	return end == len(s) || !nameChar(s[end])
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '~' || c == '+' || c == '@' || c == '%' || c >= 0x80
}

// JSON rewrites every string (keys included) of the JSON document doc. Strings
// that do not change keep their bytes; a changed one is written the way
// serde_json writes strings (UTF-8 kept, only '"', '\\' and control
// characters escaped), which is how the Rust CLIs write their files. doc must
// be valid JSON; changed reports whether anything was replaced.
func (p Paths) JSON(doc []byte) (out []byte, changed bool, err error) {
	if !p.Active() || !bytes.Contains(doc, []byte(quickProbe(p.From))) {
		return doc, false, nil
	}
	out = make([]byte, 0, len(doc)+64)
	for i := 0; i < len(doc); {
		if doc[i] != '"' {
			out = append(out, doc[i])
			i++
			continue
		}
		end := stringEnd(doc, i)
		raw := doc[i:end]
		var s string
		if bytes.IndexByte(raw, '\\') < 0 {
			s = string(raw[1 : len(raw)-1])
		} else if err := json.Unmarshal(raw, &s); err != nil {
			return nil, false, err
		}
		if r := p.String(s); r != s {
			out = appendString(out, r)
			changed = true
		} else {
			out = append(out, raw...)
		}
		i = end
	}
	return out, changed, nil
}

// quickProbe is a piece of the path that any JSON encoder writes unescaped
// (its last element, up to the first character some encoders escape: quotes,
// backslashes, HTML characters, anything not ASCII), for a quick "could it be
// in here" test.
func quickProbe(p string) string {
	p = p[strings.LastIndexByte(p, '/')+1:]
	for i := 0; i < len(p); i++ {
		if c := p[i]; c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c < 0x20 || c >= 0x80 {
			return p[:i]
		}
	}
	return p
}

// stringEnd returns the index just past the string literal at doc[i].
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(doc)
}

func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x80 {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}
