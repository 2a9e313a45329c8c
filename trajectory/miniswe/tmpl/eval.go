package tmpl

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Values are Go's shapes of Python's: string, int, float64, bool, nil,
// []any and map[string]any.

type scope struct {
	vars map[string]any
}

func (s *scope) lookup(n string) (any, bool) {
	v, ok := s.vars[n]
	return v, ok
}

type lit struct{ v any }

func (l lit) eval(*scope) (any, error) { return l.v, nil }

type name string

func (n name) eval(s *scope) (any, error) {
	v, ok := s.lookup(string(n))
	if !ok {
		return nil, fmt.Errorf("%q is undefined", string(n))
	}
	return v, nil
}

type defined struct{ n name }

func (d defined) eval(s *scope) (any, error) {
	_, ok := s.lookup(string(d.n))
	return ok, nil
}

type list []expr

func (l list) eval(s *scope) (any, error) {
	out := make([]any, len(l))
	for i, e := range l {
		v, err := e.eval(s)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

type notExpr struct{ x expr }

func (n notExpr) eval(s *scope) (any, error) {
	v, err := n.x.eval(s)
	return !truthy(v), err
}

type logic struct {
	op   string
	l, r expr
}

// eval returns an operand, as Python's and/or do.
func (e logic) eval(s *scope) (any, error) {
	l, err := e.l.eval(s)
	if err != nil {
		return nil, err
	}
	if truthy(l) == (e.op == "or") {
		return l, nil
	}
	return e.r.eval(s)
}

type binary struct {
	op   string
	l, r expr
}

func (e binary) eval(s *scope) (any, error) {
	l, err := e.l.eval(s)
	if err != nil {
		return nil, err
	}
	r, err := e.r.eval(s)
	if err != nil {
		return nil, err
	}
	switch e.op {
	case "==":
		return equal(l, r), nil
	case "!=":
		return !equal(l, r), nil
	case "in":
		switch c := r.(type) {
		case string:
			sub, ok := l.(string)
			if !ok {
				return nil, fmt.Errorf("'in <string>' requires a string on the left, not %s", pyType(l))
			}
			return strings.Contains(c, sub), nil
		case []any:
			for _, x := range c {
				if equal(l, x) {
					return true, nil
				}
			}
			return false, nil
		case map[string]any:
			k, ok := l.(string)
			_, in := c[k]
			return ok && in, nil
		}
		return nil, fmt.Errorf("'in' on %s is not supported", pyType(r))
	case "+":
		if ls, ok := l.(string); ok {
			if rs, ok := r.(string); ok {
				return ls + rs, nil
			}
		}
	}
	// Numeric operators: ints stay ints, as in Python.
	li, lok := l.(int)
	ri, rok := r.(int)
	if lb, ok := l.(bool); ok {
		li, lok = b2i(lb), true
	}
	if rb, ok := r.(bool); ok {
		ri, rok = b2i(rb), true
	}
	if lok && rok {
		switch e.op {
		case "+":
			return li + ri, nil
		case "-":
			return li - ri, nil
		case "*":
			return li * ri, nil
		case "<":
			return li < ri, nil
		case ">":
			return li > ri, nil
		case "<=":
			return li <= ri, nil
		case ">=":
			return li >= ri, nil
		}
	}
	lf, lok := toFloat(l)
	rf, rok := toFloat(r)
	if lok && rok {
		switch e.op {
		case "+":
			return lf + rf, nil
		case "-":
			return lf - rf, nil
		case "*":
			return lf * rf, nil
		case "<":
			return lf < rf, nil
		case ">":
			return lf > rf, nil
		case "<=":
			return lf <= rf, nil
		case ">=":
			return lf >= rf, nil
		}
	}
	if ls, ok := l.(string); ok {
		if rs, ok := r.(string); ok {
			switch e.op {
			case "<":
				return ls < rs, nil
			case ">":
				return ls > rs, nil
			case "<=":
				return ls <= rs, nil
			case ">=":
				return ls >= rs, nil
			}
		}
	}
	return nil, fmt.Errorf("%s %s %s is not supported", pyType(l), e.op, pyType(r))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	case bool:
		return float64(b2i(x)), true
	}
	return 0, false
}

func equal(a, b any) bool {
	if af, ok := toFloat(a); ok {
		bf, ok := toFloat(b)
		return ok && af == bf
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case nil:
		return b == nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return false
}

type index struct {
	x, key expr
	attr   bool // x.key: Jinja tries the attribute, then the item
}

func (e index) eval(s *scope) (any, error) {
	x, err := e.x.eval(s)
	if err != nil {
		return nil, err
	}
	k, err := e.key.eval(s)
	if err != nil {
		return nil, err
	}
	switch c := x.(type) {
	case map[string]any:
		if ks, ok := k.(string); ok {
			if v, ok := c[ks]; ok {
				return v, nil
			}
		}
		return nil, fmt.Errorf("%s has no attribute %v", pyType(x), k)
	case []any, string:
		i, ok := k.(int)
		if !ok {
			return nil, fmt.Errorf("%s has no attribute %v", pyType(x), k)
		}
		n := length(c)
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return nil, fmt.Errorf("index %v out of range", k)
		}
		if l, ok := c.([]any); ok {
			return l[i], nil
		}
		return string([]rune(c.(string))[i]), nil
	}
	return nil, fmt.Errorf("%s has no attribute %v", pyType(x), k)
}

type slice struct{ x, lo, hi expr }

// eval slices by code points, with Python's clamping of out-of-range ends.
func (e slice) eval(s *scope) (any, error) {
	x, err := e.x.eval(s)
	if err != nil {
		return nil, err
	}
	n := length(x)
	if n < 0 {
		return nil, fmt.Errorf("slicing %s is not supported", pyType(x))
	}
	bound := func(b expr, def int) (int, error) {
		if b == nil {
			return def, nil
		}
		v, err := b.eval(s)
		if err != nil {
			return 0, err
		}
		i, ok := v.(int)
		if !ok {
			return 0, fmt.Errorf("slice indices must be integers, not %s", pyType(v))
		}
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n), nil
	}
	lo, err := bound(e.lo, 0)
	if err != nil {
		return nil, err
	}
	hi, err := bound(e.hi, n)
	if err != nil {
		return nil, err
	}
	hi = max(hi, lo)
	switch c := x.(type) {
	case string:
		return runeSlice(c, lo, hi), nil
	case []any:
		return c[lo:hi], nil
	}
	return nil, fmt.Errorf("slicing %s is not supported", pyType(x))
}

// runeSlice is s[lo:hi] counted in code points, without converting the
// whole (possibly large) string.
func runeSlice(s string, lo, hi int) string {
	start, i := len(s), 0
	for b := range s {
		if i == lo {
			start = b
		}
		if i == hi {
			return s[start:b]
		}
		i++
	}
	if lo >= i {
		return ""
	}
	return s[start:]
}

type filter struct {
	name string
	x    expr
}

func (f filter) eval(s *scope) (any, error) {
	x, err := f.x.eval(s)
	if err != nil {
		return nil, err
	}
	switch f.name {
	case "length":
		n := length(x)
		if n < 0 {
			return nil, fmt.Errorf("%s has no length", pyType(x))
		}
		return n, nil
	default: // tojson
		return markup(toJSON(x)), nil
	}
}

// markup is already rendered text (tojson's result).
type markup string

func length(x any) int {
	switch c := x.(type) {
	case string:
		return utf8.RuneCountInString(c)
	case markup:
		return utf8.RuneCountInString(string(c))
	case []any:
		return len(c)
	case map[string]any:
		return len(c)
	}
	return -1
}

// toJSON is Jinja's tojson: json.dumps(sort_keys=True) with Python's
// ", " and ": " separators and ensure_ascii, then <, >, & and ' escaped.
func toJSON(v any) string {
	var b strings.Builder
	writeJSON(&b, v)
	r := strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`, "'", `\u0027`)
	return r.Replace(b.String())
}

func writeJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(map[bool]string{true: "true", false: "false"}[x])
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		b.WriteString(pyFloat(x))
	case markup:
		writeJSONString(b, string(x))
	case string:
		writeJSONString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONString(b, k)
			b.WriteString(": ")
			writeJSON(b, x[k])
		}
		b.WriteByte('}')
	}
}

// writeJSONString escapes as Python's json with ensure_ascii: \n \r \t \b
// \f, \" and \\ short, every other control or non-ASCII code point as
// \uXXXX (UTF-16 surrogate pairs above the BMP).
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r <= 0xffff):
				fmt.Fprintf(b, `\u%04x`, r)
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// str is Python's str() of a value, as {{ }} renders it.
func str(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case markup:
		return string(x), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		return pyFloat(x), nil
	case bool:
		if x {
			return "True", nil
		}
		return "False", nil
	case nil:
		return "None", nil
	}
	return "", fmt.Errorf("rendering %s is not supported", pyType(v))
}

// pyFloat is Python's repr of a float: the shortest round-trip digits,
// with ".0" on integral values and exponent form outside [1e-4, 1e16).
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	a := math.Abs(f)
	if a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64) // both write at least two exponent digits
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case markup:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

func pyType(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int:
		return "int"
	case float64:
		return "float"
	case string, markup:
		return "str"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// FromJSON turns a value decoded with json.Decoder.UseNumber into the
// template's values: numbers without a fraction or exponent become ints, as
// Python's json makes them.
func FromJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.Atoi(string(x)); err == nil && !strings.ContainsAny(string(x), ".eE") {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = FromJSON(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = FromJSON(e)
		}
		return out
	}
	return v
}

// PyJSON is Python's json.dumps of a value (ensure_ascii, no HTML escaping),
// as mini saves trajectories.
func PyJSON(v any) string {
	var b strings.Builder
	writeJSON(&b, v)
	return b.String()
}
