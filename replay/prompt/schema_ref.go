package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// $ref resolution within the schema, and the helpers on decoded values.

// resolve finds the targets of n's $ref (and dynamic ref) within the schema.
func (c *compiler) resolve(n *node) error {
	if r, ok := n.kw["$ref"].(string); ok {
		t, err := c.lookup(n, r)
		if err != nil {
			return err
		}
		n.ref = t
	}
	for _, key := range []string{"$dynamicRef", "$recursiveRef"} {
		if r, ok := n.kw[key]; ok && (key == "$dynamicRef") == (c.draft >= draft2020) {
			s, ok := r.(string)
			if !ok {
				return c.fail(n.loc, "%s must be a string", key)
			}
			// The static target: dynamic scopes of other resources need
			// other files, which are never loaded.
			t, err := c.lookup(n, s)
			if err != nil {
				return err
			}
			n.dynRef = t
		}
	}
	return nil
}

func (c *compiler) lookup(n *node, ref string) (*node, error) {
	u, err := n.base.Parse(ref)
	if err != nil {
		return nil, c.fail(n.loc, "$ref %q: %v", ref, err)
	}
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	res := u.String()
	if t, ok := c.locs[res+"#"+frag]; ok {
		return t, nil
	}
	doc, ok := c.resources[res]
	if !ok {
		return nil, c.fail(n.loc, "$ref %q: only references within the schema are allowed (nothing is fetched or read from disk)", ref)
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		return nil, c.fail(n.loc, "$ref %q: no anchor %q in the schema", ref, frag)
	}
	// A location no keyword compiled (inside an unknown keyword): follow
	// the pointer through the raw document and compile what is there.
	v := doc
	for _, tok := range strings.Split(frag, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch cur := v.(type) {
		case map[string]any:
			if v, ok = cur[tok]; !ok {
				return nil, c.fail(n.loc, "$ref %q: nothing at that location", ref)
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur) {
				return nil, c.fail(n.loc, "$ref %q: nothing at that location", ref)
			}
			v = cur[i]
		default:
			return nil, c.fail(n.loc, "$ref %q: nothing at that location", ref)
		}
	}
	base, _ := url.Parse(res)
	return c.compile(v, base, res+"#"+frag, false)
}

// decodeSchemaJSON decodes one JSON document with exact numbers.
func decodeSchemaJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func ratOf(v any) (*big.Rat, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	return new(big.Rat).SetString(string(num))
}

func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, e := range list {
		if out[i], ok = e.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

func uniqueStrings(list []string) bool {
	seen := make(map[string]bool, len(list))
	for _, s := range list {
		if seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}

func uniqueValues(list []any) bool {
	for i := range list {
		for j := i + 1; j < len(list); j++ {
			if equalJSON(list[i], list[j]) {
				return false
			}
		}
	}
	return true
}

// anchorOK is the meta-schemas' pattern for $anchor: 2019-09 allows ':'
// and wants a letter first, 2020-12 also takes '_'.
func anchorOK(s string, draft int) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		switch {
		case letter, i == 0 && c == '_' && draft >= draft2020:
		case i > 0 && ('0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' && draft == draft2019):
		default:
			return false
		}
	}
	return s != ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if r, ok := ratOf(v); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
