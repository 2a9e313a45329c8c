package prompt

import (
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// A JSON Schema validator of our own, drafts 4 to 2020-12, $ref only
// within the schema. It replaced a library whose package init compiled
// every draft's meta-schema: 4–7 ms of CPU at every pvisor start, four
// fifths of the start-up, paid by each process of a batch and by every
// command that never sees a schema. The schema is checked for the shape of
// each keyword it uses (what the meta-schemas would refuse) when it is
// compiled, so a bad --output-schema is still refused before any agent runs.

// Drafts by the year or number of their meta-schema.
const (
	draft4    = 4
	draft6    = 6
	draft7    = 7
	draft2019 = 2019
	draft2020 = 2020
)

// drafts maps a $schema URL without its scheme and empty fragment to its
// draft.
var drafts = map[string]int{
	"json-schema.org/draft-04/schema":      draft4,
	"json-schema.org/draft-06/schema":      draft6,
	"json-schema.org/draft-07/schema":      draft7,
	"json-schema.org/draft/2019-09/schema": draft2019,
	"json-schema.org/draft/2020-12/schema": draft2020,
	"json-schema.org/schema":               draft2020,
}

// schemaBase is where the schema "lives" for resolving $id and $ref: a
// relative $ref to another file resolves under it and is refused.
const schemaBase = "file:///pvisor-output-schema.json"

// node is one compiled (sub)schema.
type node struct {
	boolean *bool          // a true/false schema
	kw      map[string]any // its keywords, as decoded
	draft   int
	loc     string // absolute keyword location, for messages
	base    *url.URL

	ref, dynRef *node // resolved $ref and $dynamicRef/$recursiveRef
	refOnly     bool  // draft ≤ 7: $ref hides the other keywords
	lenient     bool  // never evaluated where it stands (then without if, $ref's siblings)
	refErr      error // why a lenient node's ref does not resolve

	types                     []string
	props                     map[string]*node
	patProps                  []patProp
	addProps, propNames       *node
	items                     *node // one schema for every (remaining) item
	prefix                    []*node
	addItems, contains        *node
	not, ifS, thenS, elseS    *node
	allOf, anyOf, oneOf       []*node
	depSchemas                map[string]*node
	depRequired               map[string][]string
	unevalProps, unevalItems  *node
	pattern                   *regexp.Regexp
	minimum, maximum          *big.Rat
	exclMinimum, exclMaximum  *big.Rat
	multipleOf                *big.Rat
	minLen, maxLen            int // -1 when absent
	minItems, maxItems        int
	minProps, maxProps        int
	minContains, maxContains  int
	required                  []string
	enum                      []any
	constV                    any
	hasConst, unique, assertF bool
	format                    string
}

type patProp struct {
	re *regexp.Regexp
	n  *node
}

// compiler holds what $ref resolution needs: every schema by its absolute
// location (resource URL plus JSON pointer, and anchors), and the refs to
// resolve once every location is known.
type compiler struct {
	draft     int
	locs      map[string]*node
	resources map[string]any // resource URL → its raw document
	pending   []*node
	unreached int // > 0 while compiling what is never evaluated: nodes are lenient
}

func compileSchemaDoc(doc any) (*node, error) {
	c := &compiler{draft: draft2020, locs: map[string]*node{}, resources: map[string]any{}}
	base, _ := url.Parse(schemaBase)
	root, err := c.compile(doc, base, base.String()+"#", true)
	if err != nil {
		return nil, err
	}
	// Resolving may compile locations no keyword reached (a $ref into an
	// unknown keyword's value), which may add refs of their own.
	for i := 0; i < len(c.pending); i++ {
		n := c.pending[i]
		if err := c.resolve(n); err != nil {
			if !n.lenient {
				return nil, err
			}
			// Where nothing evaluates it, a ref that leads nowhere is no
			// error (as before); should a ref from elsewhere still lead
			// here, validation fails rather than skip it.
			n.refErr = err
		}
	}
	return root, nil
}

func (c *compiler) dialect(sch any, loc string) (int, error) {
	str, ok := sch.(string)
	if !ok {
		return 0, c.fail(loc, "$schema must be a string")
	}
	u := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(str, "https://"), "http://"), "#")
	d, known := drafts[u]
	if !known {
		return 0, c.fail(loc, "$schema %q: unknown draft (only drafts 4 to 2020-12, and no meta-schema is fetched)", str)
	}
	return d, nil
}

func (c *compiler) fail(loc, format string, a ...any) error {
	return fmt.Errorf("%s: %s", strings.TrimPrefix(loc, schemaBase), fmt.Sprintf(format, a...))
}

// compile builds the node of v found at loc (an absolute location), whose
// base URL for $id and $ref is base.
func (c *compiler) compile(raw any, base *url.URL, loc string, resourceRoot bool) (*node, error) {
	if n, ok := c.locs[loc]; ok {
		return n, nil
	}
	n := &node{draft: c.draft, loc: loc, base: base, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1,
		minProps: -1, maxProps: -1, minContains: -1, maxContains: -1}
	switch x := raw.(type) {
	case bool:
		if c.draft == draft4 {
			return nil, c.fail(loc, "a schema must be an object in draft 4")
		}
		n.boolean = &x
		c.locs[loc] = n
		return n, nil
	case map[string]any:
		n.kw = x
	default:
		return nil, c.fail(loc, "a schema must be an object or a boolean, not %s", jsonType(raw))
	}
	v := n.kw
	c.locs[loc] = n
	// A resource may name its own draft (mixed dialects), the root always.
	if sch, ok := v["$schema"]; ok && (resourceRoot || v["$id"] != nil || v["id"] != nil) {
		d, err := c.dialect(sch, loc)
		if err != nil {
			return nil, err
		}
		defer func(outer int) { c.draft = outer }(c.draft)
		c.draft, n.draft = d, d
	}
	idKey := "$id"
	if c.draft == draft4 {
		idKey = "id"
	}
	if id, ok := v[idKey]; ok {
		if _, isRef := v["$ref"]; !isRef || c.draft >= draft2019 {
			s, ok := id.(string)
			if !ok {
				return nil, c.fail(loc, "%s must be a string", idKey)
			}
			u, err := base.Parse(s)
			if err != nil {
				return nil, c.fail(loc, "%s %q: %v", idKey, s, err)
			}
			frag := u.Fragment
			u.Fragment, u.RawFragment = "", ""
			if u.String() != base.String() || resourceRoot {
				base = u
				n.base = u
				c.locs[u.String()+"#"] = n
				c.resources[u.String()] = v
			}
			if frag != "" && c.draft <= draft7 {
				c.locs[u.String()+"#"+frag] = n
			}
		}
	}
	if resourceRoot {
		c.resources[base.String()] = v
	}
	for _, key := range []string{"$anchor", "$dynamicAnchor"} {
		if a, ok := v[key]; ok && c.draft >= draft2019 {
			s, ok := a.(string)
			if !ok || !anchorOK(s, c.draft) {
				return nil, c.fail(loc, "%s must be a plain name (a letter or '_', then letters, digits, '-', '_' or '.')", key)
			}
			c.locs[base.String()+"#"+s] = n
		}
	}
	if err := c.keywords(n, v, base, loc); err != nil {
		return nil, err
	}
	return n, nil
}

// sub compiles the subschema under keyword path p (already escaped).
func (c *compiler) sub(v any, base *url.URL, loc, p string) (*node, error) {
	return c.compile(v, base, loc+"/"+p, false)
}

func (c *compiler) subList(n *node, key string, base *url.URL, loc string, nonEmpty bool) ([]*node, error) {
	raw, ok := n.kw[key]
	if !ok {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok || (nonEmpty && len(list) == 0) {
		return nil, c.fail(loc, "%s must be a non-empty array of schemas", key)
	}
	out := make([]*node, len(list))
	for i, s := range list {
		var err error
		if out[i], err = c.sub(s, base, loc, key+"/"+strconv.Itoa(i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *compiler) subMap(n *node, key string, base *url.URL, loc string) (map[string]*node, error) {
	raw, ok := n.kw[key]
	if !ok {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, c.fail(loc, "%s must be an object of schemas", key)
	}
	out := make(map[string]*node, len(m))
	for _, k := range sortedKeys(m) {
		var err error
		if out[k], err = c.sub(m[k], base, loc, key+"/"+escapePointer(k)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *compiler) subOne(n *node, key string, base *url.URL, loc string) (*node, error) {
	raw, ok := n.kw[key]
	if !ok {
		return nil, nil
	}
	if c.draft == draft4 && (key == "additionalProperties" || key == "additionalItems") {
		if b, ok := raw.(bool); ok {
			return &node{boolean: &b, draft: c.draft, loc: loc + "/" + key}, nil
		}
	}
	return c.sub(raw, base, loc, key)
}

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
