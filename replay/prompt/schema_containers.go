package prompt

import (
	"strconv"
	"strings"
)

func (v *validator) array(n *node, x []any, at string, ev *evaluated) bool {
	ok := true
	if n.minItems >= 0 && len(x) < n.minItems {
		v.add(at, "minItems: got %d, want %d", len(x), n.minItems)
		ok = false
	}
	if n.maxItems >= 0 && len(x) > n.maxItems {
		v.add(at, "maxItems: got %d, want %d", len(x), n.maxItems)
		ok = false
	}
	if n.unique {
	pairs:
		for i := range x {
			for j := i + 1; j < len(x); j++ {
				if equalJSON(x[i], x[j]) {
					v.add(at, "items at %d and %d are equal", i, j)
					ok = false
					break pairs
				}
			}
		}
	}
	rest := n.items
	if n.prefix != nil && n.addItems != nil {
		rest = n.addItems
	} else if n.prefix != nil && n.draft < draft2020 {
		rest = nil // items as an array, no additionalItems: the rest is free
	}
	for i, e := range x {
		s := rest
		if i < len(n.prefix) {
			s = n.prefix[i]
		}
		if s == nil {
			continue
		}
		ok = v.check(s, e, at+"/"+strconv.Itoa(i), &evaluated{}) && ok
		if ev.items == nil {
			ev.items = map[int]bool{}
		}
		ev.items[i] = true
	}
	if n.contains != nil {
		count := 0
		for i, e := range x {
			if good, _ := v.trial(n.contains, e, at+"/"+strconv.Itoa(i), &evaluated{}); good {
				count++
				if n.draft < draft2020 {
					continue // contains annotates items since 2020-12
				}
				if ev.items == nil {
					ev.items = map[int]bool{}
				}
				ev.items[i] = true
			}
		}
		least := 1
		if n.minContains >= 0 {
			least = n.minContains
		}
		if count < least {
			v.add(at, "minContains: got %d matching items, want %d", count, least)
			ok = false
		}
		if n.maxContains >= 0 && count > n.maxContains {
			v.add(at, "maxContains: got %d matching items, want %d", count, n.maxContains)
			ok = false
		}
	}
	return ok
}

func (v *validator) object(n *node, x map[string]any, at string, ev *evaluated) bool {
	ok := true
	if n.minProps >= 0 && len(x) < n.minProps {
		v.add(at, "minProperties: got %d, want %d", len(x), n.minProps)
		ok = false
	}
	if n.maxProps >= 0 && len(x) > n.maxProps {
		v.add(at, "maxProperties: got %d, want %d", len(x), n.maxProps)
		ok = false
	}
	if missing := missingProps(x, n.required); len(missing) > 0 {
		v.add(at, "missing propert%s %s", plural(len(missing)), strings.Join(missing, ", "))
		ok = false
	}
	for _, k := range sortedKeys(n.depRequired) {
		if _, has := x[k]; has {
			if missing := missingProps(x, n.depRequired[k]); len(missing) > 0 {
				v.add(at, "propert%s %s required, if %s exists", plural(len(missing)), strings.Join(missing, ", "), quote(k))
				ok = false
			}
		}
	}
	var extra []string
	for _, k := range sortedKeys(x) {
		child := at + "/" + escapePointer(k)
		if n.propNames != nil {
			// The name is an instance of its own: its location must not
			// look like the object's to the cycle check.
			if good, errs := v.trial(n.propNames, k, child+"\x00name", &evaluated{}); !good {
				v.add(at, "invalid propertyName %s", quote(k))
				for _, e := range errs {
					v.add(child, "property name: %s", e.msg)
				}
				ok = false
			}
		}
		matched := false
		if s, has := n.props[k]; has {
			matched = true
			ok = v.check(s, x[k], child, &evaluated{}) && ok
		}
		for _, p := range n.patProps {
			if p.re.MatchString(k) {
				matched = true
				ok = v.check(p.n, x[k], child, &evaluated{}) && ok
			}
		}
		if !matched && n.addProps != nil {
			matched = true
			if n.addProps.boolean != nil && !*n.addProps.boolean {
				extra = append(extra, quote(k))
			} else {
				ok = v.check(n.addProps, x[k], child, &evaluated{}) && ok
			}
		}
		if matched {
			if ev.props == nil {
				ev.props = map[string]bool{}
			}
			ev.props[k] = true
		}
	}
	if len(extra) > 0 {
		v.add(at, "additional propert%s %s not allowed", plural(len(extra)), strings.Join(extra, ", "))
		ok = false
	}
	return ok
}
