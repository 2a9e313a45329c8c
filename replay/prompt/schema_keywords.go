package prompt

import (
	"math/big"
	"net/url"
	"regexp"
)

var schemaTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true}

// keywords checks and compiles n's keywords for its draft; keywords of
// other drafts and unknown ones are annotations, ignored as the drafts say.
func (c *compiler) keywords(n *node, kw map[string]any, base *url.URL, loc string) error {
	d := c.draft
	var err error
	// Definitions first: even where $ref hides the other keywords (draft
	// ≤ 7) they hold what refs and anchors point at.
	defsKey := "$defs"
	if d <= draft7 {
		defsKey = "definitions"
	}
	for _, key := range []string{"definitions", "$defs"} {
		if _, ok := kw[key]; ok && (key == defsKey || d >= draft2019) {
			if _, err := c.subMap(n, key, base, loc); err != nil {
				return err
			}
		}
	}
	if r, ok := kw["$ref"]; ok {
		if _, ok := r.(string); !ok {
			return c.fail(loc, "$ref must be a string")
		}
		n.refOnly = d <= draft7
		c.pending = append(c.pending, n)
		if n.refOnly {
			// The other keywords are never evaluated, but the meta-schema
			// checks them.
			c.unreached++
			defer func() { c.unreached-- }()
		}
	}
	n.lenient = c.unreached > 0
	if _, ok := kw["$dynamicRef"]; ok && d >= draft2020 {
		c.pending = append(c.pending, n)
	}
	if _, ok := kw["$recursiveRef"]; ok && d == draft2019 {
		c.pending = append(c.pending, n)
	}
	if t, ok := kw["type"]; ok {
		switch t := t.(type) {
		case string:
			n.types = []string{t}
		case []any:
			for _, e := range t {
				s, ok := e.(string)
				if !ok {
					return c.fail(loc, "type must be a string or an array of strings")
				}
				n.types = append(n.types, s)
			}
		default:
			return c.fail(loc, "type must be a string or an array of strings, not %s", jsonType(t))
		}
		for _, s := range n.types {
			if !schemaTypes[s] {
				return c.fail(loc, "type %q is not a JSON Schema type", s)
			}
		}
		if _, list := t.([]any); list && (len(n.types) == 0 || !uniqueStrings(n.types)) {
			return c.fail(loc, "type must list distinct types, at least one")
		}
	}
	if e, ok := kw["enum"]; ok {
		if n.enum, ok = e.([]any); !ok {
			return c.fail(loc, "enum must be an array")
		}
		if d <= draft7 && (len(n.enum) == 0 || !uniqueValues(n.enum)) {
			return c.fail(loc, "enum must list distinct values, at least one, up to draft 7")
		}
	}
	if v, ok := kw["const"]; ok && d >= draft6 {
		n.constV, n.hasConst = v, true
	}
	nums := []struct {
		key string
		dst **big.Rat
	}{{"minimum", &n.minimum}, {"maximum", &n.maximum}, {"multipleOf", &n.multipleOf}}
	if d >= draft6 {
		nums = append(nums, struct {
			key string
			dst **big.Rat
		}{"exclusiveMinimum", &n.exclMinimum}, struct {
			key string
			dst **big.Rat
		}{"exclusiveMaximum", &n.exclMaximum})
	}
	for _, f := range nums {
		if v, ok := kw[f.key]; ok {
			if *f.dst, ok = ratOf(v); !ok {
				return c.fail(loc, "%s must be a number", f.key)
			}
		}
	}
	if n.multipleOf != nil && n.multipleOf.Sign() <= 0 {
		return c.fail(loc, "multipleOf must be greater than 0")
	}
	if d == draft4 {
		// Draft 4's exclusive bounds are booleans beside minimum/maximum.
		for _, p := range []struct {
			key       string
			bound     **big.Rat
			exclusive **big.Rat
		}{{"exclusiveMinimum", &n.minimum, &n.exclMinimum}, {"exclusiveMaximum", &n.maximum, &n.exclMaximum}} {
			if v, ok := kw[p.key]; ok {
				b, ok := v.(bool)
				if !ok {
					return c.fail(loc, "%s must be a boolean in draft 4", p.key)
				}
				if b && *p.bound != nil {
					*p.exclusive, *p.bound = *p.bound, nil
				}
			}
		}
	}
	counts := []struct {
		key  string
		dst  *int
		from int
	}{{"minLength", &n.minLen, 4}, {"maxLength", &n.maxLen, 4}, {"minItems", &n.minItems, 4}, {"maxItems", &n.maxItems, 4},
		{"minProperties", &n.minProps, 4}, {"maxProperties", &n.maxProps, 4}, {"minContains", &n.minContains, 2019}, {"maxContains", &n.maxContains, 2019}}
	for _, f := range counts {
		if v, ok := kw[f.key]; ok && d >= f.from {
			r, ok := ratOf(v)
			if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() {
				return c.fail(loc, "%s must be a non-negative integer", f.key)
			}
			*f.dst = int(min(r.Num().Int64(), 1<<31))
		}
	}
	if p, ok := kw["pattern"]; ok {
		s, ok := p.(string)
		if !ok {
			return c.fail(loc, "pattern must be a string")
		}
		if n.pattern, err = regexp.Compile(s); err != nil {
			return c.fail(loc, "pattern %q is not a regular expression: %v", s, err)
		}
	}
	if f, ok := kw["format"]; ok {
		if n.format, ok = f.(string); !ok {
			return c.fail(loc, "format must be a string")
		}
		// As the drafts say: an assertion up to draft 7, an annotation since.
		n.assertF = d <= draft7
	}
	if u, ok := kw["uniqueItems"]; ok {
		if n.unique, ok = u.(bool); !ok {
			return c.fail(loc, "uniqueItems must be a boolean")
		}
	}
	if r, ok := kw["required"]; ok {
		if n.required, ok = stringList(r); !ok || !uniqueStrings(n.required) || d == draft4 && len(n.required) == 0 {
			return c.fail(loc, "required must be an array of distinct strings")
		}
	}
	if n.props, err = c.subMap(n, "properties", base, loc); err != nil {
		return err
	}
	if pp, err := c.subMap(n, "patternProperties", base, loc); err != nil {
		return err
	} else {
		for _, k := range sortedKeys(pp) {
			re, err := regexp.Compile(k)
			if err != nil {
				return c.fail(loc, "patternProperties %q is not a regular expression: %v", k, err)
			}
			n.patProps = append(n.patProps, patProp{re, pp[k]})
		}
	}
	if n.addProps, err = c.subOne(n, "additionalProperties", base, loc); err != nil {
		return err
	}
	if d >= draft2020 {
		if n.prefix, err = c.subList(n, "prefixItems", base, loc, false); err != nil {
			return err
		}
		if n.items, err = c.subOne(n, "items", base, loc); err != nil {
			return err
		}
	} else {
		// additionalItems applies only beside an items array, but is
		// checked either way, as the meta-schema does.
		if n.addItems, err = c.subOne(n, "additionalItems", base, loc); err != nil {
			return err
		}
		if _, isList := kw["items"].([]any); isList {
			if n.prefix, err = c.subList(n, "items", base, loc, false); err != nil {
				return err
			}
		} else {
			n.addItems = nil
			if n.items, err = c.subOne(n, "items", base, loc); err != nil {
				return err
			}
		}
	}
	for _, s := range []struct {
		key  string
		from int
		dst  **node
	}{{"contains", 6, &n.contains}, {"propertyNames", 6, &n.propNames}, {"not", 4, &n.not},
		{"if", 7, &n.ifS},
		{"unevaluatedProperties", 2019, &n.unevalProps}, {"unevaluatedItems", 2019, &n.unevalItems}} {
		if d >= s.from {
			if *s.dst, err = c.subOne(n, s.key, base, loc); err != nil {
				return err
			}
		}
	}
	if d >= draft7 {
		// then and else mean nothing without if: still checked, as the
		// meta-schema checks them, but their refs are never resolved, as a
		// validator that never evaluates them need not.
		if n.ifS == nil {
			c.unreached++
		}
		n.thenS, err = c.subOne(n, "then", base, loc)
		if err == nil {
			n.elseS, err = c.subOne(n, "else", base, loc)
		}
		if n.ifS == nil {
			c.unreached--
			n.thenS, n.elseS = nil, nil
		}
		if err != nil {
			return err
		}
	}
	for _, s := range []struct {
		key string
		dst *[]*node
	}{{"allOf", &n.allOf}, {"anyOf", &n.anyOf}, {"oneOf", &n.oneOf}} {
		if *s.dst, err = c.subList(n, s.key, base, loc, true); err != nil {
			return err
		}
	}
	if d >= draft2019 {
		if n.depSchemas, err = c.subMap(n, "dependentSchemas", base, loc); err != nil {
			return err
		}
		if dr, ok := kw["dependentRequired"]; ok {
			m, ok := dr.(map[string]any)
			if !ok {
				return c.fail(loc, "dependentRequired must be an object of string arrays")
			}
			n.depRequired = map[string][]string{}
			for k, v := range m {
				if n.depRequired[k], ok = stringList(v); !ok {
					return c.fail(loc, "dependentRequired/%s must be an array of strings", k)
				}
			}
		}
	}
	// Dependencies was split in 2019-09; still honoured, as before.
	if deps, ok := kw["dependencies"]; ok {
		m, ok := deps.(map[string]any)
		if !ok {
			return c.fail(loc, "dependencies must be an object")
		}
		for _, k := range sortedKeys(m) {
			if list, ok := m[k].([]any); ok {
				req, ok := stringList(list)
				if !ok {
					return c.fail(loc, "dependencies/%s must be an array of strings or a schema", k)
				}
				if n.depRequired == nil {
					n.depRequired = map[string][]string{}
				}
				n.depRequired[k] = req
				continue
			}
			s, err := c.sub(m[k], base, loc, "dependencies/"+escapePointer(k))
			if err != nil {
				return err
			}
			if n.depSchemas == nil {
				n.depSchemas = map[string]*node{}
			}
			n.depSchemas[k] = s
		}
	}
	return nil
}
