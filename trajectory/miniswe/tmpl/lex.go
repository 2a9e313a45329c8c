// Package tmpl renders the Jinja templates mini-swe-agent formats its
// observations with (jinja2.Template(src, undefined=StrictUndefined) with
// Jinja's default settings). It implements the subset mini's bundled and
// saved configs use: {{ }} output, {% if/elif/else/endif %}, {% set %},
// {# #} comments, "-" whitespace control, attribute and subscript access,
// slices, + - * comparisons, in, and/or/not, "is defined", list literals,
// and the length and tojson filters. Anything else is an error that names
// the construct, so a template is rendered exactly or not at all.
package tmpl

import (
	"fmt"
	"strings"
	"unicode"
)

// segment is one piece of a template's source: literal text, an
// expression ({{ }}) or a statement ({% %}).
type segment struct {
	kind byte // 't' text, 'e' expression, 's' statement
	src  string
	line int
}

// split cuts src into segments and applies the whitespace control markers.
// As Jinja does by default, one trailing newline of the template is dropped.
func split(src string) ([]segment, error) {
	src = strings.TrimSuffix(src, "\n")
	var segs []segment
	line := 1
	stripNext := false
	for len(src) > 0 {
		i := indexOpen(src)
		text := src
		if i >= 0 {
			text = src[:i]
		}
		if stripNext {
			text = strings.TrimLeftFunc(text, unicode.IsSpace)
			stripNext = false
		}
		if i < 0 {
			segs = append(segs, segment{kind: 't', src: text, line: line})
			break
		}
		open := src[i : i+2]
		rest := src[i+2:]
		if strings.HasPrefix(rest, "-") {
			text = strings.TrimRightFunc(text, unicode.IsSpace)
			rest = rest[1:]
		} else if strings.HasPrefix(rest, "+") {
			return nil, fmt.Errorf("line %d: the %q whitespace marker is not supported", line, open+"+")
		}
		segs = append(segs, segment{kind: 't', src: text, line: line})
		line += strings.Count(src[:i+2], "\n")
		closer := map[string]string{"{{": "}}", "{%": "%}", "{#": "#}"}[open]
		j := strings.Index(rest, closer)
		if j < 0 {
			return nil, fmt.Errorf("line %d: %s is never closed with %s", line, open, closer)
		}
		body := rest[:j]
		if strings.HasSuffix(body, "-") {
			body = body[:len(body)-1]
			stripNext = true
		}
		switch open {
		case "{{":
			segs = append(segs, segment{kind: 'e', src: body, line: line})
		case "{%":
			segs = append(segs, segment{kind: 's', src: body, line: line})
		}
		line += strings.Count(rest[:j+2], "\n")
		src = rest[j+2:]
	}
	return segs, nil
}

func indexOpen(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '{' && (s[i+1] == '{' || s[i+1] == '%' || s[i+1] == '#') {
			return i
		}
	}
	return -1
}

// token is one lexeme of an expression.
type token struct {
	kind byte // 'n' name, 'i' integer, 's' string, 'o' operator, 0 end
	s    string
	n    int
}

func lexExpr(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i
			for j < len(src) && (src[j] == '_' || unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			toks = append(toks, token{kind: 'n', s: src[i:j]})
			i = j
		case c >= '0' && c <= '9':
			j, n := i, 0
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				n = n*10 + int(src[j]-'0')
				j++
			}
			if j < len(src) && (src[j] == '.' || src[j] == 'e' || src[j] == '_') {
				return nil, fmt.Errorf("number literal %q: only integers are supported", src[i:])
			}
			toks = append(toks, token{kind: 'i', n: n, s: src[i:j]})
			i = j
		case c == '"' || c == '\'':
			j := i + 1
			var b strings.Builder
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\\' {
					return nil, fmt.Errorf("string literal with a backslash escape is not supported")
				}
				b.WriteByte(src[j])
			}
			if j >= len(src) {
				return nil, fmt.Errorf("unterminated string literal")
			}
			toks = append(toks, token{kind: 's', s: b.String()})
			i = j + 1
		default:
			op := ""
			for _, o := range []string{"==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "(", ")", "[", "]", ",", ".", "|", ":"} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("unsupported character %q", c)
			}
			toks = append(toks, token{kind: 'o', s: op})
			i += len(op)
		}
	}
	return append(toks, token{}), nil
}
