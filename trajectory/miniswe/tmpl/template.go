package tmpl

import (
	"fmt"
	"strings"
)

// Template is a parsed template.
type Template struct{ body []node }

type node interface {
	render(b *strings.Builder, s *scope) error
}

type text string

func (t text) render(b *strings.Builder, _ *scope) error {
	b.WriteString(string(t))
	return nil
}

type output struct {
	e    expr
	line int
}

func (o output) render(b *strings.Builder, s *scope) error {
	v, err := o.e.eval(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", o.line, err)
	}
	str, err := str(v)
	if err != nil {
		return fmt.Errorf("line %d: %w", o.line, err)
	}
	b.WriteString(str)
	return nil
}

type branch struct {
	cond expr // nil: else
	body []node
	line int
}

type ifNode []branch

func (n ifNode) render(b *strings.Builder, s *scope) error {
	for _, br := range n {
		if br.cond != nil {
			v, err := br.cond.eval(s)
			if err != nil {
				return fmt.Errorf("line %d: %w", br.line, err)
			}
			if !truthy(v) {
				continue
			}
		}
		return renderAll(b, s, br.body)
	}
	return nil
}

type setNode struct {
	name string
	e    expr
	line int
}

func (n setNode) render(_ *strings.Builder, s *scope) error {
	v, err := n.e.eval(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.line, err)
	}
	s.vars[n.name] = v
	return nil
}

func renderAll(b *strings.Builder, s *scope, body []node) error {
	for _, n := range body {
		if err := n.render(b, s); err != nil {
			return err
		}
	}
	return nil
}

// Parse parses a template; an unsupported construct is an error naming it.
func Parse(src string) (*Template, error) {
	segs, err := split(src)
	if err != nil {
		return nil, err
	}
	p := &tparser{segs: segs}
	body, end, err := p.block()
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, fmt.Errorf("line %d: {%% %s %%} without a matching {%% if %%}", p.line, end)
	}
	return &Template{body: body}, nil
}

// Render renders the template with vars (values as FromJSON makes them).
// An undefined variable is an error, as with Jinja's StrictUndefined.
func (t *Template) Render(vars map[string]any) (string, error) {
	s := &scope{vars: make(map[string]any, len(vars)+2)}
	for k, v := range vars {
		s.vars[k] = v
	}
	var b strings.Builder
	if err := renderAll(&b, s, t.body); err != nil {
		return "", err
	}
	return b.String(), nil
}

type tparser struct {
	segs []segment
	pos  int
	line int
	// stmt is the statement that ended the last block (elif/else/endif),
	// with its source.
	stmtSrc string
}

// block parses nodes up to an elif, else or endif (returned as end) or the
// end of the template (end "").
func (p *tparser) block() ([]node, string, error) {
	var body []node
	for p.pos < len(p.segs) {
		sg := p.segs[p.pos]
		p.pos++
		p.line = sg.line
		switch sg.kind {
		case 't':
			if sg.src != "" {
				body = append(body, text(sg.src))
			}
		case 'e':
			e, err := parseExpr(sg.src)
			if err != nil {
				return nil, "", fmt.Errorf("line %d: {{%s}}: %w", sg.line, sg.src, err)
			}
			body = append(body, output{e: e, line: sg.line})
		case 's':
			kw, rest := keyword(sg.src)
			switch kw {
			case "if":
				n, err := p.ifBlock(rest, sg.line)
				if err != nil {
					return nil, "", err
				}
				body = append(body, n)
			case "set":
				lhs, rhs, ok := strings.Cut(rest, "=")
				lhs = strings.TrimSpace(lhs)
				if !ok || !isName(lhs) {
					return nil, "", fmt.Errorf("line %d: {%%%s%%}: only \"set name = expression\" is supported", sg.line, sg.src)
				}
				e, err := parseExpr(rhs)
				if err != nil {
					return nil, "", fmt.Errorf("line %d: {%%%s%%}: %w", sg.line, sg.src, err)
				}
				body = append(body, setNode{name: lhs, e: e, line: sg.line})
			case "elif", "else", "endif":
				p.stmtSrc = rest
				return body, kw, nil
			default:
				return nil, "", fmt.Errorf("line %d: {%% %s %%} is not supported (pvisor renders if/elif/else/endif and set)", sg.line, kw)
			}
		}
	}
	return body, "", nil
}

func (p *tparser) ifBlock(cond string, line int) (ifNode, error) {
	var n ifNode
	for {
		var c expr
		if cond != "\x00else" {
			var err error
			if c, err = parseExpr(cond); err != nil {
				return nil, fmt.Errorf("line %d: {%% if %s %%}: %w", line, cond, err)
			}
		}
		body, end, err := p.block()
		if err != nil {
			return nil, err
		}
		n = append(n, branch{cond: c, body: body, line: line})
		switch end {
		case "":
			return nil, fmt.Errorf("line %d: {%% if %%} is never closed with {%% endif %%}", line)
		case "endif":
			return n, nil
		case "elif":
			if c == nil {
				return nil, fmt.Errorf("line %d: {%% elif %%} after {%% else %%}", p.line)
			}
			cond, line = p.stmtSrc, p.line
		case "else":
			if c == nil {
				return nil, fmt.Errorf("line %d: two {%% else %%} in one {%% if %%}", p.line)
			}
			cond, line = "\x00else", p.line
		}
	}
}

func keyword(src string) (string, string) {
	src = strings.TrimSpace(src)
	i := strings.IndexFunc(src, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '(' })
	if i < 0 {
		return src, ""
	}
	return src[:i], src[i:]
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}
