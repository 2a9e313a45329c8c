package result

import (
	"encoding/json"
	"testing"
)

func TestCompareNextAction(t *testing.T) {
	tool := func(name, args string) ActionTool { return ActionTool{Name: name, Arguments: json.RawMessage(args)} }
	cases := []struct {
		name               string
		a, b               Action
		wantStatus         string
		wantExact          *bool
		wantSim            *float64
		count, names, args bool
	}{
		{name: "identical", a: Action{Text: "Reading it.", Tools: []ActionTool{tool("Read", `{"file_path":"/a"}`)}},
			b:          Action{Text: "Reading it.", Tools: []ActionTool{tool("Read", `{ "file_path" : "/a" }`)}},
			wantStatus: "comparable", wantExact: ptr(true), wantSim: ptr(1.0), count: true, names: true, args: true},
		{name: "whitespace only differs", a: Action{Text: "a  b\n"}, b: Action{Text: "a b"},
			wantStatus: "comparable", wantExact: ptr(false), wantSim: ptr(1.0), count: true, names: true, args: true},
		{name: "both empty", a: Action{}, b: Action{Text: "  "}, wantStatus: "not_applicable_both_empty", count: true, names: true, args: true},
		{name: "original empty", a: Action{}, b: Action{Text: "x"}, wantStatus: "original_empty", wantExact: ptr(false), wantSim: ptr(0.0), count: true, names: true, args: true},
		{name: "other tool", a: Action{Tools: []ActionTool{tool("Read", `{}`)}}, b: Action{Tools: []ActionTool{tool("Bash", `{}`)}},
			wantStatus: "not_applicable_both_empty", count: true, names: false, args: true},
		{name: "key order does not matter, values do", a: Action{Tools: []ActionTool{tool("Edit", `{"a":1,"b":2}`)}}, b: Action{Tools: []ActionTool{tool("Edit", `{"b":2,"a":1.5}`)}},
			wantStatus: "not_applicable_both_empty", count: true, names: true, args: false},
		{name: "fewer tools", a: Action{Tools: []ActionTool{tool("Read", `{}`), tool("Read", `{}`)}}, b: Action{Tools: []ActionTool{tool("Read", `{}`)}},
			wantStatus: "not_applicable_both_empty", count: false, names: false, args: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := CompareNextAction(tc.a, tc.b, false).Metrics
			if m.TextComparisonStatus != tc.wantStatus || !eqPtr(m.TextExact, tc.wantExact) || !eqPtr(m.TextSimilarity, tc.wantSim) {
				t.Errorf("text: status %s exact %v sim %v", m.TextComparisonStatus, deref(m.TextExact), deref(m.TextSimilarity))
			}
			if m.ToolCountEqual != tc.count || m.OrderedToolNamesEqual != tc.names || m.ToolArgumentsEqual != tc.args {
				t.Errorf("tools: count %v names %v args %v", m.ToolCountEqual, m.OrderedToolNamesEqual, m.ToolArgumentsEqual)
			}
		})
	}
	if c := CompareNextAction(Action{}, Action{}, true); c.InputCondition != "boundary_user_prompt_appended" || c.Gating {
		t.Errorf("input condition %s gating %v", c.InputCondition, c.Gating)
	}
}

func ptr[T any](v T) *T { return &v }

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
