package tmpl

import (
	"fmt"
	"strings"
)

// expr is a parsed expression.
type expr interface {
	eval(s *scope) (any, error)
}

type parser struct {
	toks  []token
	pos   int
	depth int
}

// Bounds of what Parse accepts, so that a template it accepts also renders
// (issue 24 #9): deep nesting (100,000 parentheses) would exhaust a
// renderer's stack, and a large repeat ('x' * 1000000000) its memory.
const (
	maxDepth      = 64
	maxMultiplier = 10_000
)

// nest counts one level of nesting; the caller undoes it with p.depth--.
func (p *parser) nest() error {
	if p.depth++; p.depth > maxDepth {
		return fmt.Errorf("the expression nests deeper than %d levels", maxDepth)
	}
	return nil
}

func parseExpr(src string) (expr, error) {
	toks, err := lexExpr(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != 0 {
		return nil, fmt.Errorf("unexpected %q", t.s)
	}
	return e, nil
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != 0 {
		p.pos++
	}
	return t
}

// is reports whether the next token is the operator or keyword s, and
// consumes it if so.
func (p *parser) is(s string) bool {
	if t := p.peek(); (t.kind == 'o' || t.kind == 'n') && t.s == s {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(s string) error {
	if !p.is(s) {
		return fmt.Errorf("expected %q, found %q", s, p.peek().s)
	}
	return nil
}

// Precedence as Jinja's: or < and < not < comparisons < + - < * < filters,
// attribute and subscript.
func (p *parser) or() (expr, error) {
	if err := p.nest(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	l, err := p.and()
	for err == nil && p.is("or") {
		var r expr
		if r, err = p.and(); err == nil {
			l = logic{op: "or", l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) and() (expr, error) {
	l, err := p.not()
	for err == nil && p.is("and") {
		var r expr
		if r, err = p.not(); err == nil {
			l = logic{op: "and", l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) not() (expr, error) {
	if p.is("not") {
		if err := p.nest(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		e, err := p.not()
		return notExpr{e}, err
	}
	return p.compare()
}

func (p *parser) compare() (expr, error) {
	l, err := p.sum()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == 'o' && (t.s == "==" || t.s == "!=" || t.s == "<" || t.s == ">" || t.s == "<=" || t.s == ">="):
			p.next()
			r, err := p.sum()
			if err != nil {
				return nil, err
			}
			l = binary{op: t.s, l: l, r: r}
		case t.kind == 'n' && t.s == "in":
			p.next()
			r, err := p.sum()
			if err != nil {
				return nil, err
			}
			l = binary{op: "in", l: l, r: r}
		case t.kind == 'n' && t.s == "not" && p.toks[p.pos+1].s == "in":
			p.pos += 2
			r, err := p.sum()
			if err != nil {
				return nil, err
			}
			l = notExpr{binary{op: "in", l: l, r: r}}
		case t.kind == 'n' && t.s == "is":
			p.next()
			neg := p.is("not")
			if !p.is("defined") {
				return nil, fmt.Errorf("the test %q is not supported (only \"defined\")", p.peek().s)
			}
			n, ok := l.(name)
			if !ok {
				return nil, fmt.Errorf("\"is defined\" is supported on plain variables only")
			}
			var e expr = defined{n}
			if neg {
				e = notExpr{e}
			}
			l = e
		default:
			return l, nil
		}
	}
}

func (p *parser) sum() (expr, error) {
	l, err := p.product()
	for err == nil {
		t := p.peek()
		if t.kind != 'o' || (t.s != "+" && t.s != "-") {
			break
		}
		p.next()
		var r expr
		if r, err = p.product(); err == nil {
			l = binary{op: t.s, l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) product() (expr, error) {
	l, err := p.unary()
	for err == nil && p.is("*") {
		var r expr
		if r, err = p.unary(); err == nil {
			if err = checkRepeat(l, r); err == nil {
				l = binary{op: "*", l: l, r: r}
			}
		}
	}
	return l, err
}

func (p *parser) unary() (expr, error) {
	if p.is("-") {
		if err := p.nest(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		e, err := p.unary()
		return binary{op: "-", l: lit{0}, r: e}, err
	}
	return p.postfix()
}

func (p *parser) postfix() (expr, error) {
	e, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.is("."):
			t := p.next()
			if t.kind != 'n' {
				return nil, fmt.Errorf("expected an attribute name after '.', found %q", t.s)
			}
			if strings.HasPrefix(t.s, "_") {
				// As Jinja's sandbox: no way from a value to Python's internals
				// (cycler.__init__.__globals__.os).
				return nil, fmt.Errorf("attribute %s is private: attributes starting with '_' are not supported", t.s)
			}
			e = index{x: e, key: lit{t.s}, attr: true}
		case p.is("["):
			var lo, hi expr
			if !p.is(":") {
				if lo, err = p.or(); err != nil {
					return nil, err
				}
				if p.is("]") {
					e = index{x: e, key: lo}
					continue
				}
				if err := p.expect(":"); err != nil {
					return nil, err
				}
			}
			if !p.is("]") {
				if hi, err = p.or(); err != nil {
					return nil, err
				}
				if err := p.expect("]"); err != nil {
					return nil, fmt.Errorf("slices with a step are not supported: %w", err)
				}
			}
			e = slice{x: e, lo: lo, hi: hi}
		case p.is("|"):
			t := p.next()
			if t.kind != 'n' || (t.s != "length" && t.s != "tojson") {
				return nil, fmt.Errorf("the filter %q is not supported (only length and tojson)", t.s)
			}
			if p.peek().s == "(" {
				return nil, fmt.Errorf("filter arguments are not supported")
			}
			e = filter{name: t.s, x: e}
		default:
			return e, nil
		}
	}
}

func (p *parser) primary() (expr, error) {
	t := p.next()
	switch t.kind {
	case 'i':
		return lit{t.n}, nil
	case 's':
		return lit{t.s}, nil
	case 'n':
		switch t.s {
		case "true", "True":
			return lit{true}, nil
		case "false", "False":
			return lit{false}, nil
		case "none", "None":
			return lit{nil}, nil
		case "and", "or", "not", "in", "is", "if", "else":
			return nil, fmt.Errorf("unexpected %q", t.s)
		}
		if p.peek().s == "(" {
			return nil, fmt.Errorf("calling %s() is not supported", t.s)
		}
		return name(t.s), nil
	case 'o':
		switch t.s {
		case "(":
			e, err := p.or()
			if err != nil {
				return nil, err
			}
			if p.peek().s == "," {
				return nil, fmt.Errorf("tuples are not supported")
			}
			return e, p.expect(")")
		case "[":
			var items []expr
			for !p.is("]") {
				if len(items) > 0 {
					if err := p.expect(","); err != nil {
						return nil, err
					}
					if p.is("]") {
						break
					}
				}
				e, err := p.or()
				if err != nil {
					return nil, err
				}
				items = append(items, e)
			}
			return list(items), nil
		}
	case 0:
		return nil, fmt.Errorf("the expression ends early")
	}
	return nil, fmt.Errorf("unexpected %q", t.s)
}

// checkRepeat refuses a product Jinja would evaluate as a repeat of a
// string or list literal, or with a multiplier past maxMultiplier: this
// renderer multiplies numbers only, and mini's Jinja would build the whole
// repeat in memory.
func checkRepeat(l, r expr) error {
	for _, e := range []expr{l, r} {
		switch v := e.(type) {
		case list:
			return fmt.Errorf("repeating a list with * is not supported")
		case lit:
			switch n := v.v.(type) {
			case string:
				return fmt.Errorf("repeating a string with * is not supported")
			case int:
				if n > maxMultiplier || n < -maxMultiplier {
					return fmt.Errorf("a multiplier of %d is over the %d this renderer accepts", n, maxMultiplier)
				}
			}
		}
	}
	return nil
}
