package prompt

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
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

func missingProps(x map[string]any, names []string) []string {
	var missing []string
	for _, r := range names {
		if _, has := x[r]; !has {
			missing = append(missing, quote(r))
		}
	}
	return missing
}

func plural(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

// everything is what a true schema evaluates: all of inst.
func everything(inst any) *evaluated {
	ev := &evaluated{allItems: true}
	if obj, ok := inst.(map[string]any); ok {
		ev.props = make(map[string]bool, len(obj))
		for k := range obj {
			ev.props[k] = true
		}
	}
	return ev
}

func typeIn(inst any, types []string) bool {
	got := jsonType(inst)
	for _, t := range types {
		if t == got || t == "number" && got == "integer" {
			return true
		}
	}
	return false
}

func containsValue(list []any, v any) bool {
	for _, e := range list {
		if equalJSON(e, v) {
			return true
		}
	}
	return false
}

// equalJSON is JSON equality: numbers by value, objects by members.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, oka := ratOf(a)
		rb, okb := ratOf(bn)
		return oka && okb && ra.Cmp(rb) == 0
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], bl[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, has := bm[k]
			if !has || !equalJSON(av, bv) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// quote shows a value in a message: strings in single quotes, the rest as
// JSON.
func quote(v any) string {
	if s, ok := v.(string); ok {
		return "'" + s + "'"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// formatOK checks the formats that drafts 4 to 7 assert; others pass.
func formatOK(format, s string) bool {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339, strings.ToUpper(s))
		return err == nil
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "time":
		_, err := time.Parse("15:04:05Z07:00", strings.ToUpper(s))
		return err == nil
	case "email":
		a, err := mail.ParseAddress(s)
		return err == nil && a.Address == s
	case "hostname":
		return hostnameOK(s)
	case "ipv4":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is4()
	case "ipv6":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is6() && a.Zone() == ""
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.IsAbs()
	case "uri-reference":
		_, err := url.Parse(s)
		return err == nil
	case "uuid":
		return uuidOK(s)
	case "regex":
		_, err := regexp.Compile(s)
		return err == nil
	case "json-pointer":
		return s == "" || strings.HasPrefix(s, "/") && !strings.Contains(strings.NewReplacer("~0", "", "~1", "").Replace(s), "~")
	}
	return true
}

func hostnameOK(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func uuidOK(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
