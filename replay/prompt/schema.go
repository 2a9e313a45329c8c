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
