package prompt

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// schemaError is one violation: where in the instance, and what.
type schemaError struct{ at, msg string }

// evaluated is what a schema and its in-place subschemas looked at, for
// unevaluatedProperties and unevaluatedItems.
type evaluated struct {
	props    map[string]bool
	items    map[int]bool
	allItems bool
}

func (e *evaluated) merge(o *evaluated) {
	for k := range o.props {
		if e.props == nil {
			e.props = map[string]bool{}
		}
		e.props[k] = true
	}
	for i := range o.items {
		if e.items == nil {
			e.items = map[int]bool{}
		}
		e.items[i] = true
	}
	e.allItems = e.allItems || o.allItems
}

type validator struct {
	errs []schemaError
	// active is the (schema, instance location) pairs being checked: a
	// $ref that comes back to one of them without consuming the instance
	// would never end.
	active map[activeKey]bool
}

type activeKey struct {
	n  *node
	at string
}

func (v *validator) add(at, format string, a ...any) {
	v.errs = append(v.errs, schemaError{at, fmt.Sprintf(format, a...)})
}

// trial checks inst against n on the side: its errors are returned, not
// kept.
func (v *validator) trial(n *node, inst any, at string, ev *evaluated) (bool, []schemaError) {
	mark := len(v.errs)
	ok := v.check(n, inst, at, ev)
	errs := append([]schemaError(nil), v.errs[mark:]...)
	v.errs = v.errs[:mark]
	return ok, errs
}

// check validates inst (at instance location at) against n, adds what is
// wrong to v.errs, and on success merges what n evaluated into parent.
func (v *validator) check(n *node, inst any, at string, parent *evaluated) bool {
	if n.boolean != nil {
		// true annotates nothing: the keyword that holds it does.
		if !*n.boolean {
			v.add(at, "false schema")
			return false
		}
		return true
	}
	if n.refErr != nil {
		v.add(at, "%v", n.refErr)
		return false
	}
	key := activeKey{n, at}
	if v.active[key] {
		v.add(at, "validation cycle at %s", strings.TrimPrefix(n.loc, schemaBase))
		return false
	}
	v.active[key] = true
	defer delete(v.active, key)
	ev := &evaluated{}
	ok := true
	if n.ref != nil {
		ok = v.check(n.ref, inst, at, ev) && ok
		if n.refOnly {
			// As the library this validator replaced did, const still
			// applies beside a draft 6/7 $ref.
			if n.hasConst && !equalJSON(n.constV, inst) {
				v.add(at, "value must be %s", quote(n.constV))
				ok = false
			}
			if ok {
				parent.merge(ev)
			}
			return ok
		}
	}
	if n.dynRef != nil {
		ok = v.check(n.dynRef, inst, at, ev) && ok
	}
	if len(n.types) > 0 && !typeIn(inst, n.types) {
		v.add(at, "got %s, want %s", jsonType(inst), strings.Join(n.types, " or "))
		ok = false
	}
	if n.enum != nil && !containsValue(n.enum, inst) {
		quoted := make([]string, len(n.enum))
		for i, e := range n.enum {
			quoted[i] = quote(e)
		}
		v.add(at, "value must be one of %s", strings.Join(quoted, ", "))
		ok = false
	}
	if n.hasConst && !equalJSON(n.constV, inst) {
		v.add(at, "value must be %s", quote(n.constV))
		ok = false
	}
	switch x := inst.(type) {
	case json.Number:
		ok = v.number(n, x, at) && ok
	case string:
		ok = v.str(n, x, at) && ok
	case []any:
		ok = v.array(n, x, at, ev) && ok
	case map[string]any:
		ok = v.object(n, x, at, ev) && ok
	}
	ok = v.applicators(n, inst, at, ev) && ok
	if x, isObj := inst.(map[string]any); isObj && n.unevalProps != nil {
		for _, k := range sortedKeys(x) {
			if !ev.props[k] {
				ok = v.check(n.unevalProps, x[k], at+"/"+escapePointer(k), &evaluated{}) && ok
			}
		}
		ev.merge(everything(inst))
	}
	if x, isArr := inst.([]any); isArr && n.unevalItems != nil && !ev.allItems {
		for i, e := range x {
			if !ev.items[i] {
				ok = v.check(n.unevalItems, e, at+"/"+strconv.Itoa(i), &evaluated{}) && ok
			}
		}
		ev.allItems = true
	}
	if ok {
		parent.merge(ev)
	}
	return ok
}

func (v *validator) applicators(n *node, inst any, at string, ev *evaluated) bool {
	ok := true
	for _, s := range n.allOf {
		ok = v.check(s, inst, at, ev) && ok
	}
	if n.anyOf != nil {
		var errs []schemaError
		matched := false
		for _, s := range n.anyOf {
			good, e := v.trial(s, inst, at, ev)
			matched = matched || good
			errs = append(errs, e...)
		}
		if !matched {
			v.errs = append(v.errs, errs...)
			if len(errs) == 0 {
				v.add(at, "anyOf failed")
			}
			ok = false
		}
	}
	if n.oneOf != nil {
		var errs []schemaError
		var matched []string
		one := &evaluated{}
		for i, s := range n.oneOf {
			if good, e := v.trial(s, inst, at, one); good {
				matched = append(matched, strconv.Itoa(i))
			} else {
				errs = append(errs, e...)
			}
		}
		switch len(matched) {
		case 1:
			ev.merge(one)
		case 0:
			v.errs = append(v.errs, errs...)
			if len(errs) == 0 {
				v.add(at, "oneOf failed, none matched")
			}
			ok = false
		default:
			v.add(at, "oneOf failed, subschemas %s matched", strings.Join(matched, ", "))
			ok = false
		}
	}
	if n.not != nil {
		if good, _ := v.trial(n.not, inst, at, &evaluated{}); good {
			v.add(at, "'not' failed")
			ok = false
		}
	}
	if n.ifS != nil {
		if good, _ := v.trial(n.ifS, inst, at, ev); good {
			if n.thenS != nil {
				ok = v.check(n.thenS, inst, at, ev) && ok
			}
		} else if n.elseS != nil {
			ok = v.check(n.elseS, inst, at, ev) && ok
		}
	}
	if obj, isObj := inst.(map[string]any); isObj {
		for _, k := range sortedKeys(n.depSchemas) {
			if _, has := obj[k]; has {
				ok = v.check(n.depSchemas[k], inst, at, ev) && ok
			}
		}
	}
	return ok
}

func (v *validator) number(n *node, x json.Number, at string) bool {
	r, isNum := ratOf(x)
	if !isNum {
		return true
	}
	ok := true
	bound := func(name string, b *big.Rat, fails func(int) bool) {
		if b != nil && fails(r.Cmp(b)) {
			v.add(at, "%s: got %s, want %s", name, x, b.RatString())
			ok = false
		}
	}
	bound("minimum", n.minimum, func(c int) bool { return c < 0 })
	bound("maximum", n.maximum, func(c int) bool { return c > 0 })
	bound("exclusiveMinimum", n.exclMinimum, func(c int) bool { return c <= 0 })
	bound("exclusiveMaximum", n.exclMaximum, func(c int) bool { return c >= 0 })
	if n.multipleOf != nil && !new(big.Rat).Quo(r, n.multipleOf).IsInt() {
		v.add(at, "multipleOf: got %s, want a multiple of %s", x, n.multipleOf.RatString())
		ok = false
	}
	return ok
}

func (v *validator) str(n *node, x, at string) bool {
	ok := true
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := utf8.RuneCountInString(x)
		if n.minLen >= 0 && l < n.minLen {
			v.add(at, "minLength: got %d, want %d", l, n.minLen)
			ok = false
		}
		if n.maxLen >= 0 && l > n.maxLen {
			v.add(at, "maxLength: got %d, want %d", l, n.maxLen)
			ok = false
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(x) {
		v.add(at, "%s does not match pattern %s", quote(x), quote(n.pattern.String()))
		ok = false
	}
	if n.assertF && !formatOK(n.format, x) {
		v.add(at, "%s is not valid %s", quote(x), n.format)
		ok = false
	}
	return ok
}
