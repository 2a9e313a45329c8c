package bridge

import (
	"encoding/json"
	"testing"
)

func TestAddFields(t *testing.T) {
	off := map[string]json.RawMessage{"chat_template_kwargs": json.RawMessage(`{"enable_thinking":false}`), "reasoning_effort": json.RawMessage(`"none"`)}
	for _, tc := range []struct{ name, in, want string }{
		{"appended in key order", `{"model":"m","messages":[]}`, `{"model":"m","messages":[],"chat_template_kwargs":{"enable_thinking":false},"reasoning_effort":"none"}`},
		{"empty object", `{}`, `{"chat_template_kwargs":{"enable_thinking":false},"reasoning_effort":"none"}`},
		{"merged into an object", `{"chat_template_kwargs":{"x":1},"reasoning_effort":"high"}`, `{"chat_template_kwargs":{"x":1,"enable_thinking":false},"reasoning_effort":"none"}`},
		{"object member replaced", `{"chat_template_kwargs":{"enable_thinking":true}}`, `{"chat_template_kwargs":{"enable_thinking":false},"reasoning_effort":"none"}`},
		{"whitespace kept", "{\n  \"a\": [1, 2]\n}\n", "{\n  \"a\": [1, 2]\n,\"chat_template_kwargs\":{\"enable_thinking\":false},\"reasoning_effort\":\"none\"}"},
	} {
		got, err := addFields([]byte(tc.in), off)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: invalid JSON %s", tc.name, got)
		}
	}
	if _, err := addFields([]byte(`[1]`), off); err == nil {
		t.Error("an array body was accepted")
	}
	if got, _ := addFields([]byte(`[1]`), nil); string(got) != `[1]` {
		t.Error("no fields must leave the body alone")
	}
}
