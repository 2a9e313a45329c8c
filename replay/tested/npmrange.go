package tested

import (
	"strconv"
	"strings"
)

// Satisfies reports whether version v lies in an npm semver range such as a
// package's engines.node (">=22.19.0", "^20.17.0 || >=22.9.0", "18 - 22",
// "~1.2", "*"). understood is false for a range it cannot read; the caller
// then decides without it. Pre-release versions are compared as semver
// orders them (npm's extra rule for them in ranges is not applied: engines
// ranges name releases).
func Satisfies(v, rng string) (ok, understood bool) {
	got, err := ParseSemver(strings.TrimSpace(v))
	if err != nil {
		return false, false
	}
	for _, alt := range strings.Split(rng, "||") {
		set, good := comparators(alt)
		if !good {
			return false, false
		}
		all := true
		for _, c := range set {
			if !c.holds(got) {
				all = false
			}
		}
		if all {
			ok = true
		}
	}
	return ok, true
}

type comparator struct {
	op string // ">=", ">", "<=", "<", "="
	v  Semver
}

func (c comparator) holds(v Semver) bool {
	n := v.Compare(c.v)
	switch c.op {
	case ">=":
		return n >= 0
	case ">":
		return n > 0
	case "<=":
		return n <= 0
	case "<":
		return n < 0
	}
	return n == 0
}

// comparators reads one space-separated set ("A - B" hyphen ranges too).
func comparators(s string) ([]comparator, bool) {
	f := strings.Fields(s)
	if len(f) == 3 && f[1] == "-" {
		lo, lok := partial(f[0])
		hi, hok := partial(f[2])
		if !lok || !hok {
			return nil, false
		}
		out := []comparator{{">=", lo.floor()}}
		if hi.parts == 3 {
			return append(out, comparator{"<=", hi.floor()}), true
		}
		return append(out, comparator{"<", hi.next()}), true
	}
	var out []comparator
	for _, tok := range f {
		op := ""
		for _, o := range []string{">=", "<=", ">", "<", "=", "^", "~"} {
			if strings.HasPrefix(tok, o) {
				op, tok = o, tok[len(o):]
				break
			}
		}
		p, good := partial(tok)
		if !good {
			return nil, false
		}
		switch {
		case p.parts == 0: // *, x: anything
		case op == "^":
			out = append(out, comparator{">=", p.floor()}, comparator{"<", p.caret()})
		case op == "~":
			out = append(out, comparator{">=", p.floor()}, comparator{"<", p.tilde()})
		case op == "" || op == "=":
			if p.parts == 3 {
				out = append(out, comparator{"=", p.floor()})
			} else {
				out = append(out, comparator{">=", p.floor()}, comparator{"<", p.next()})
			}
		case op == ">" && p.parts < 3:
			out = append(out, comparator{">=", p.next()})
		case op == "<=" && p.parts < 3:
			out = append(out, comparator{"<", p.next()})
		default:
			out = append(out, comparator{op, p.floor()})
		}
	}
	return out, true
}

// partialVersion is "22", "22.19", "22.19.0" or "*": parts says how many
// numbers were given.
type partialVersion struct {
	n     [3]int
	parts int
	pre   string
}

func partial(s string) (partialVersion, bool) {
	s = strings.TrimPrefix(s, "v")
	var p partialVersion
	if s == "" || s == "*" || s == "x" || s == "X" {
		return p, true
	}
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, '-'); i >= 0 {
		s, p.pre = s[:i], s[i+1:]
	}
	for i, part := range strings.Split(s, ".") {
		if i >= 3 {
			return p, false
		}
		if part == "x" || part == "X" || part == "*" {
			break
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return p, false
		}
		p.n[i], p.parts = n, i+1
	}
	return p, true
}

func (p partialVersion) floor() Semver { return Semver{n: p.n, pre: p.pre} }

// next is the first version past the given parts: 22 → 23.0.0, 22.19 → 22.20.0.
func (p partialVersion) next() Semver {
	v := Semver{n: p.n}
	switch p.parts {
	case 1:
		v.n = [3]int{p.n[0] + 1, 0, 0}
	case 2:
		v.n = [3]int{p.n[0], p.n[1] + 1, 0}
	default:
		v.n[2]++
	}
	return v
}

// caret: ^1.2.3 < 2.0.0, ^0.2.3 < 0.3.0, ^0.0.3 < 0.0.4.
func (p partialVersion) caret() Semver {
	switch {
	case p.n[0] > 0 || p.parts == 1:
		return Semver{n: [3]int{p.n[0] + 1, 0, 0}}
	case p.n[1] > 0 || p.parts == 2:
		return Semver{n: [3]int{0, p.n[1] + 1, 0}}
	}
	return Semver{n: [3]int{0, 0, p.n[2] + 1}}
}

// tilde: ~1.2.3 < 1.3.0, ~1 < 2.0.0.
func (p partialVersion) tilde() Semver {
	if p.parts == 1 {
		return Semver{n: [3]int{p.n[0] + 1, 0, 0}}
	}
	return Semver{n: [3]int{p.n[0], p.n[1] + 1, 0}}
}
