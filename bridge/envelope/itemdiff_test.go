package envelope

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFirstDifference(t *testing.T) {
	for _, tc := range []struct{ got, want, diff string }{
		{`{"a":1}`, `{"a":1}`, ""},
		{`{"type":"x","output":"secret A"}`, `{"type":"x","output":"secret B"}`, "output (another value)"},
		{`{"content":[{"text":"a"}]}`, `{"content":[{"text":"b"}]}`, "content[0].text (another value)"},
		{`{"a":1,"status":"done"}`, `{"a":1}`, "status (only in the request)"},
		{`{"a":1}`, `{"a":1,"id":"x"}`, "id (missing from the request)"},
		{`{"c":[1]}`, `{"c":[1,2]}`, "c (1 elements, the rebuilt session has 2)"},
		{`{"c":"1"}`, `{"c":1}`, "c (another JSON type)"},
		{`[1]`, `{"a":1}`, "the item (another JSON type)"},
	} {
		var got, want any
		_ = json.Unmarshal([]byte(tc.got), &got)
		_ = json.Unmarshal([]byte(tc.want), &want)
		d := FirstDifference(got, want, "")
		if d != tc.diff {
			t.Errorf("%s vs %s: %q, want %q", tc.got, tc.want, d, tc.diff)
		}
		if strings.Contains(d, "secret") {
			t.Errorf("the difference quotes a value: %q", d)
		}
	}
}
