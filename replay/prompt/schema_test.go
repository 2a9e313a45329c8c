package prompt

import (
	"fmt"
	"strings"
	"testing"
)

// schemaCases are schemas of every draft with instances each must accept
// and refuse. The verdicts were recorded from santhosh-tekuri/jsonschema
// v6.0.3, the library this validator replaced, so the two agree on them.
var schemaCases = []struct {
	schema         string
	valid, invalid []string
}{
	{schema, []string{`{"verdict":"pass","score":3}`, `{"verdict":"pass","score":2.0}`}, []string{`{"verdict":"x","score":3}`, `{"verdict":"pass","score":-1}`, `{"verdict":"pass","score":1.5}`, `{"verdict":"pass","score":3,"notes":["abcdef"]}`, `{"verdict":"pass","score":3,"z":1}`, `[]`, `null`}},
	{`{"type":["string","null"],"minLength":2,"maxLength":3,"pattern":"^a"}`, []string{`"ab"`, `null`, `"aé"`}, []string{`"a"`, `"abcd"`, `"ba"`, `1`}},
	{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","maximum":5,"exclusiveMaximum":true,"minimum":1}`, []string{`4.99`, `1`}, []string{`5`, `0.5`, `"x"`}},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"number","exclusiveMaximum":5,"multipleOf":0.5}`, []string{`4.5`}, []string{`5`, `4.3`}},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}`, []string{`["a",1]`, `[]`}, []string{`["a",1,2]`, `[1]`}},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`, []string{`["a",1,2]`}, []string{`[2]`}},
	{`{"prefixItems":[{"type":"string"}],"items":{"type":"integer"}}`, []string{`["a",1,2]`}, []string{`["a","b"]`}},
	{`{"prefixItems":[{"type":"string"}],"unevaluatedItems":false}`, []string{`["a"]`}, []string{`["a",1]`}},
	{`{"properties":{"a":{}},"allOf":[{"properties":{"b":{}}}],"unevaluatedProperties":false}`, []string{`{"a":1,"b":2}`}, []string{`{"a":1,"c":3}`}},
	{`{"anyOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{}},"required":["b"]}],"unevaluatedProperties":false}`, []string{`{"a":"x"}`, `{"b":1}`, `{"a":"x","b":1}`}, []string{`{"a":1}`, `{"a":"x","c":1}`}},
	{`{"oneOf":[{"type":"integer"},{"minimum":2}]}`, []string{`1`, `"x"`}, []string{`3`, `1.5`}},
	{`{"not":{"type":"string"}}`, []string{`1`}, []string{`"x"`}},
	{`{"if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]},"else":{"required":["c"]}}`, []string{`{"a":1,"b":1}`, `{"a":2,"c":1}`}, []string{`{"a":1}`, `{"a":2}`}},
	{`{"contains":{"type":"integer"},"minContains":2,"maxContains":3}`, []string{`[1,2]`, `["a",1,2]`}, []string{`[1]`, `[1,2,3,4]`}},
	{`{"$schema":"http://json-schema.org/draft-06/schema#","contains":{"type":"integer"}}`, []string{`[1]`}, []string{`[]`, `["a"]`}},
	{`{"uniqueItems":true}`, []string{`[1,2]`, `[[1],[2]]`}, []string{`[1,1.0]`, `[{"a":1},{"a":1}]`}},
	{`{"propertyNames":{"maxLength":2},"minProperties":1,"maxProperties":2}`, []string{`{"ab":1}`}, []string{`{"abc":1}`, `{}`, `{"a":1,"b":2,"c":3}`}},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"a":["b"],"c":{"required":["d"]}}}`, []string{`{"a":1,"b":2}`, `{"c":1,"d":1}`}, []string{`{"a":1}`, `{"c":1}`}},
	{`{"dependentRequired":{"a":["b"]},"dependentSchemas":{"c":{"required":["d"]}}}`, []string{`{"a":1,"b":1}`}, []string{`{"a":1}`, `{"c":1}`}},
	{`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"},"v":{"type":"integer"}}}},"$ref":"#/$defs/n"}`, []string{`{"v":1,"next":{"v":2}}`}, []string{`{"v":1,"next":{"v":"x"}}`}},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"$ref":"#/definitions/s","type":"integer"}`, []string{`"x"`}, []string{`1`}},
	{`{"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s","maxLength":1}`, []string{`"x"`}, []string{`"xy"`, `1`}},
	{`{"$defs":{"s":{"$anchor":"str","type":"string"}},"$ref":"#str"}`, []string{`"x"`}, []string{`1`}},
	{`{"$id":"http://example.com/root.json","$defs":{"s":{"$id":"s.json","type":"string"}},"$ref":"s.json"}`, []string{`"x"`}, []string{`1`}},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"d":{"format":"date-time"},"e":{"format":"email"},"i":{"format":"ipv4"},"u":{"format":"uuid"},"h":{"format":"hostname"}}}`, []string{`{"d":"2024-01-02T03:04:05Z"}`, `{"e":"a@b.c"}`, `{"i":"1.2.3.4"}`, `{"u":"123e4567-e89b-12d3-a456-426614174000"}`, `{"h":"a.b-c"}`}, []string{`{"d":"2024-01-02"}`, `{"e":"nope"}`, `{"i":"1.2.3"}`, `{"u":"x"}`, `{"h":"-a"}`}},
	{`{"properties":{"d":{"format":"date-time"}}}`, []string{`{"d":"nope"}`}, []string{}},
	{`{"const":{"a":[1,2]}}`, []string{`{"a":[1,2]}`, `{"a":[1,2.0]}`}, []string{`{"a":[2,1]}`}},
	{`{"enum":[1,"a",null,[1]]}`, []string{`1`, `1.0`, `"a"`, `null`, `[1]`}, []string{`2`}},
	{`{"patternProperties":{"^x":{"type":"integer"}},"additionalProperties":{"type":"string"}}`, []string{`{"x1":1,"y":"s"}`}, []string{`{"x1":"s"}`, `{"y":1}`}},
	{`true`, []string{`1`}, []string{}},
	{`false`, []string{}, []string{`1`}},
	{`{"items":false}`, []string{`[]`}, []string{`[1]`}},
	{`{"type":"integer","minimum":0}`, []string{`12345678901234567890`, `1e2`, `1.5e1`}, []string{`-12345678901234567890`}},
	{`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"a":{"type":"integer"}},"additionalProperties":false}`, []string{`{"a":1}`}, []string{`{"b":1}`}},
	{`{"$ref":"#"}`, []string{}, []string{`1`}},
	{`{"allOf":[{"$ref":"#"}]}`, []string{}, []string{`1`}},
	{`{"properties":{"a":{"$ref":"#"}}}`, []string{`{"a":{"a":{}}}`}, []string{}},
	{`{"x":{"type":"string"},"$ref":"#/x"}`, []string{`"s"`}, []string{`1`}},
	{`{"$schema":"http://json-schema.org/draft/2019-09/schema","items":[{"type":"string"}],"additionalItems":{"type":"integer"}}`, []string{`["a",1]`}, []string{`["a","b"]`}},
	{`{"$schema":"https://json-schema.org/draft/2020-12/schema","$dynamicAnchor":"meta","properties":{"a":{"$dynamicRef":"#meta"}},"type":"object"}`, []string{`{"a":{}}`}, []string{`{"a":1}`}},
}

func TestSchemaDrafts(t *testing.T) {
	for _, tc := range schemaCases {
		s, err := CompileSchema([]byte(tc.schema))
		if err != nil {
			t.Errorf("%s: %v", tc.schema, err)
			continue
		}
		for _, in := range tc.valid {
			if err := s.Validate([]byte(in)); err != nil {
				t.Errorf("%s refuses %s: %v", tc.schema, in, err)
			}
		}
		for _, in := range tc.invalid {
			if err := s.Validate([]byte(in)); err == nil {
				t.Errorf("%s accepts %s", tc.schema, in)
			}
		}
	}
}

// Schemas that the meta-schemas (or $ref resolution) refuse, also as the
// library did.
func TestSchemaRefused(t *testing.T) {
	for _, s := range []string{`{"type":12}`, `{"type":"strin"}`, `{"enum":1}`, `{"minLength":-1}`, `{"minLength":1.5}`,
		`{"pattern":"("}`, `{"required":"a"}`, `{"properties":1}`, `{"properties":{"a":1}}`, `{"allOf":[]}`, `{"$ref":"#/nope"}`,
		`{"$ref":"other.json"}`, `{"$ref":1}`, `{"multipleOf":0}`, `{"$schema":"http://json-schema.org/draft-04/schema#","exclusiveMinimum":1}`,
		`{"$schema":"http://example.com/x"}`, `{"items":[{}]}`, `{"$ref":"#foo"}`, `{"uniqueItems":"yes"}`, `{"format":1}`,
		`{"minimum":"1"}`, `[]`, `1`, `{"dependentRequired":{"a":"b"}}`, `{"$schema":"http://json-schema.org/draft-04/schema#","items":true}`} {
		if _, err := CompileSchema([]byte(s)); err == nil || !strings.Contains(err.Error(), "not a valid JSON Schema") {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// A schema that refers to itself without consuming the instance fails
// instead of recursing for ever.
func TestSchemaCycle(t *testing.T) {
	s, err := CompileSchema([]byte(`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate([]byte(`1`)); err == nil || !strings.Contains(err.Error(), "validation cycle") {
		t.Errorf("cycle: %v", err)
	}
}

// FuzzSchema: no schema or instance makes compiling or validating panic.
func FuzzSchema(f *testing.F) {
	for _, tc := range schemaCases {
		for _, in := range append(tc.valid, tc.invalid...) {
			f.Add(tc.schema, in)
		}
	}
	f.Fuzz(func(t *testing.T, schema, inst string) {
		s, err := CompileSchema([]byte(schema))
		if err != nil {
			return
		}
		_ = s.Validate([]byte(inst))
	})
}

// libraryVerdicts are edge cases of every draft with what the library this
// validator replaced said of them: "true"/"false" for the instance, or
// "compile-error" for the schema.
var libraryVerdicts = [][3]string{
	{`{"$schema":"https://json-schema.org/draft/2019-09/schema","format":"email"}`, `"nope"`, "true"},
	{`{"$schema":"https://json-schema.org/draft/2020-12/schema","format":"email"}`, `"nope"`, "true"},
	{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer"}`, `1.0`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"integer"}`, `1.0`, "true"},
	{`{"items":true}`, `[1]`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://x/y.json","definitions":{"a":{"type":"string"}},"$ref":"#/definitions/a"}`, `1`, "false"},
	{`{"$id":"http://x/y.json","$defs":{"a":{"type":"string"}},"properties":{"p":{"$ref":"#/$defs/a"}}}`, `{"p":1}`, "false"},
	{`{"$id":"http://x/y.json","$defs":{"a":{"type":"string"}},"properties":{"p":{"$ref":"http://x/y.json#/$defs/a"}}}`, `{"p":1}`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","properties":{"d":{"format":"date"}}}`, `{"d":"2024-02-30"}`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","format":"uri"}`, `"relative/x"`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","format":"ipv6"}`, `"::1"`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","format":"time"}`, `"12:00:00Z"`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","format":"time"}`, `"12:00:00"`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","format":"date-time"}`, `"2024-01-01t00:00:00z"`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","format":"email"}`, `"A <a@b.c>"`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","format":"hostname"}`, `"exa_mple.com"`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","format":"regex"}`, `"("`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","format":"unknown-thing"}`, `"x"`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema","format":"email"}`, `5`, "true"},
	{`{"type":"number","multipleOf":0.01}`, `0.07`, "true"},
	{`{"maxLength":2}`, `"éé"`, "true"},
	{`{"type":"object","required":[]}`, `{}`, "true"},
	{`{"enum":[]}`, `1`, "false"},
	{`{"$schema":"http://json-schema.org/draft-04/schema#","enum":[]}`, `1`, "compile-error"},
	{`{"$schema":"http://json-schema.org/draft-04/schema#","required":[]}`, `{}`, "compile-error"},
	{`{"type":[]}`, `1`, "compile-error"},
	{`{"type":["string","string"]}`, `"a"`, "compile-error"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","contains":false}`, `[]`, "false"},
	{`{"$defs":{"x":{"$anchor":"1bad"}}}`, `1`, "compile-error"},
	{`{"minimum":1e400}`, `1`, "false"},
	{`{"$schema":"http://json-schema.org/draft-06/schema#","exclusiveMinimum":true}`, `1`, "compile-error"},
	{`{"dependentSchemas":{"a":1}}`, `{}`, "compile-error"},
	{`{"additionalProperties":{"type":"string"},"properties":{"a":true}}`, `{"a":1,"b":2}`, "false"},
	{`{"propertyNames":{"pattern":"^a"}}`, `{"b":1}`, "false"},
	{`{"unevaluatedProperties":false,"if":{"properties":{"a":true}},"then":{"properties":{"b":true}}}`, `{"a":1,"b":1}`, "true"},
	{`{"unevaluatedProperties":false,"if":{"properties":{"a":true},"required":["a"]},"else":{"properties":{"b":true}}}`, `{"b":1}`, "true"},
	{`{"unevaluatedProperties":false,"not":{"properties":{"a":true},"required":["z"]}}`, `{"a":1}`, "false"},
	{`{"unevaluatedItems":false,"contains":{"type":"string"}}`, `["a",1]`, "false"},
	{`{"unevaluatedItems":false,"items":true}`, `["a",1]`, "true"},
	{`{"oneOf":[{"properties":{"a":true}},{"required":["zz"]}],"unevaluatedProperties":false}`, `{"a":1}`, "true"},
	{`{"$ref":"#/$defs/a","$defs":{"a":{"$id":"a.json","$ref":"#/$defs/b","$defs":{"b":{"type":"string"}}}}}`, `1`, "false"},
	{`{"$ref":"#/$defs/a","$defs":{"a":{"$id":"a.json","$ref":"#/$defs/b","$defs":{"b":{"type":"string"}}}}}`, `"s"`, "true"},
	{`{"$defs":{"a":{"$id":"a.json","type":"string"}},"$ref":"a.json"}`, `1`, "false"},
	{`{"allOf":[true,{"type":"string"}]}`, `1`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","$id":"#foo","type":"string"}`, `1`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"$id":"#foo","type":"string"}},"$ref":"#foo"}`, `1`, "false"},
	{`{"uniqueItems":true}`, `[{"a":1,"b":2},{"b":2,"a":1}]`, "false"},
	{`{"const":null}`, `null`, "true"},
	{`{"const":null}`, `0`, "false"},
	{`{"minProperties":1}`, `[]`, "true"},
	{`{"type":"integer"}`, `1e400`, "true"},
	{`{"maximum":10}`, `1e400`, "false"},
	{`{"$ref":"#/properties/a","properties":{"a":{"type":"string"}}}`, `1`, "false"},
	{`{"$ref":"#/%24defs/a","$defs":{"a":{"type":"string"}}}`, `1`, "false"},
	{`{"$ref":"#/$defs/a%20b","$defs":{"a b":{"type":"string"}}}`, `1`, "false"},
	{`{"$ref":"#/$defs/a~1b","$defs":{"a/b":{"type":"string"}}}`, `1`, "false"},
	{`{"$ref":"#/$defs/a","$defs":{"a":{"type":"string"}}}`, `1`, "false"},
	{`{"$schema":"http://json-schema.org/schema#","type":"string"}`, `1`, "false"},
	{`{"$schema":"https://json-schema.org/draft/next/schema","type":"string"}`, `1`, "compile-error"},
	{`{"pattern":"\\p{L}+"}`, `"é"`, "true"},
	{`{"pattern":"^\\d+$"}`, `"٣"`, "false"},
	{`{"$dynamicRef":"#nope"}`, `1`, "compile-error"},
	{`{"type":"string","contentMediaType":"application/json"}`, `"{"`, "true"},
	{`{"properties":{"a":{"$schema":"http://json-schema.org/draft-04/schema#","exclusiveMinimum":true,"minimum":1}}}`, `{"a":1}`, "compile-error"},
	{`{"required":["a","a"]}`, `{}`, "compile-error"},
	{`{"maxContains":1}`, `[1,1]`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","maxContains":1,"contains":true}`, `[1,1]`, "true"},
	{`{"$schema":"https://json-schema.org/draft/2019-09/schema","enum":[1,1]}`, `1`, "true"},
	{`{"$schema":"https://json-schema.org/draft/2020-12/schema","enum":[1,1]}`, `1`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","enum":[]}`, `1`, "compile-error"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"const":1,"$ref":"#"}]}`, `["x"]`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"const":1,"$ref":"#/definitions/s"}],"definitions":{"s":{"type":"string"}}}`, `["x"]`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"$ref":"#"}]}`, `["x"]`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"$ref":"#"}]}`, `[["x"]]`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"reffed":{"type":"array"}},"properties":{"foo":{"$ref":"#/definitions/reffed","maxItems":2}}}`, `{"foo":[1,2,3]}`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"reffed":{"type":"array"}},"properties":{"foo":{"$ref":"#/definitions/reffed","const":1}}}`, `{"foo":[1,2,3]}`, "false"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"reffed":{"type":"array"}},"properties":{"foo":{"$ref":"#/definitions/reffed","enum":[1]}}}`, `{"foo":[1,2,3]}`, "true"},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"reffed":{"type":"array"}},"properties":{"foo":{"$ref":"#/definitions/reffed","type":"string"}}}`, `{"foo":[1,2,3]}`, "true"},
	{`{"$schema":"http://json-schema.org/draft-04/schema#","definitions":{"reffed":{"type":"array"}},"properties":{"foo":{"$ref":"#/definitions/reffed","enum":[1]}}}`, `{"foo":[1,2,3]}`, "true"},
}

func TestSchemaLibraryVerdicts(t *testing.T) {
	for _, c := range libraryVerdicts {
		got := "compile-error"
		if s, err := CompileSchema([]byte(c[0])); err == nil {
			got = fmt.Sprint(s.Validate([]byte(c[1])) == nil)
		}
		if got != c[2] {
			t.Errorf("%s on %s: %s, the library said %s", c[0], c[1], got, c[2])
		}
	}
}
