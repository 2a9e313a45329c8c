package fakemodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadExampleScript(t *testing.T) {
	s, err := LoadScript(filepath.Join("testdata", "example-script.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := Script{
		Replies: []Reply{
			{Thinking: "List the files and read the README at the same time.", Text: "Looking around first.",
				ToolCalls: []ToolCall{
					{Name: "Bash", Arguments: json.RawMessage(`{"command": "ls -A", "description": "List the project root"}`)},
					{Name: "Read", Arguments: json.RawMessage(`{"file_path": "{CWD}/README.md"}`)},
				}},
			{ToolCalls: []ToolCall{{Type: "custom", Name: "apply_patch",
				Input: "*** Begin Patch\n*** Add File: NOTES.md\n+# Notes\n*** End Patch\n"}}},
			{Text: "Added NOTES.md."},
		},
		Final: "Nothing left to do.", Side: "Greeter survey", Models: []string{"claude-fake-1", "fake-model"},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("example script (-want +got):\n%s", diff)
	}
}

func TestParseScriptErrors(t *testing.T) {
	for _, tc := range []struct {
		name, script, wantErr string
	}{
		{"unknown key", `{"replies":[{"text":"a","tool_call":[]}]}`, `unknown field "tool_call"`},
		{"trailing data", `{"replies":[]} {}`, "data after the top-level object"},
		{"empty reply", `{"replies":[{"text":"a"},{}]}`, "reply 1 is empty"},
		{"no name", `{"replies":[{"tool_calls":[{"arguments":{}}]}]}`, "reply 0 tool call 0 has no name"},
		{"arguments not object", `{"replies":[{"tool_calls":[{"name":"Bash","arguments":"ls"}]}]}`, "arguments must be a JSON object"},
		{"arguments null", `{"replies":[{"tool_calls":[{"name":"Bash","arguments":null}]}]}`, "arguments must be a JSON object"},
		{"input on function", `{"replies":[{"tool_calls":[{"name":"Bash","input":"ls"}]}]}`, `input is only for type "custom"`},
		{"arguments on custom", `{"replies":[{"tool_calls":[{"type":"custom","name":"apply_patch","arguments":{}}]}]}`, "takes input text"},
		{"bad type", `{"replies":[{"tool_calls":[{"type":"shell","name":"x"}]}]}`, `type "shell"`},
		{"not json", `replies: []`, "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScript([]byte(tc.script))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseScript(%s) error = %v, want it to mention %q", tc.script, err, tc.wantErr)
			}
		})
	}
}

func TestLoadScriptNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(p, []byte(`{"replies":[{}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScript(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("LoadScript error = %v, want it to name %s", err, p)
	}
	if _, err := LoadScript(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("LoadScript of a missing file succeeded")
	}
}

func TestExpand(t *testing.T) {
	s := Script{
		Final: "done in {CWD}", Side: "{CWD}",
		Replies: []Reply{{
			Thinking: "think {CWD}", Text: "text {CWD} {UNKNOWN}",
			ToolCalls: []ToolCall{
				{Name: "Read", Arguments: json.RawMessage(`{"file_path":"{CWD}/a.txt","n":1}`)},
				{Type: "custom", Name: "apply_patch", Input: "*** Add File: {CWD}/b\n"},
			},
		}},
	}
	// A value with quotes and a backslash must stay valid inside JSON arguments.
	dir := `/tmp/a "quoted" \dir`
	got := s.Expand(map[string]string{"CWD": dir})
	if err := got.Validate(); err != nil {
		t.Fatalf("expanded script is invalid: %v", err)
	}
	var args map[string]any
	if err := json.Unmarshal(got.Replies[0].ToolCalls[0].Arguments, &args); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"file_path": dir + "/a.txt", "n": 1.0}
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("expanded arguments (-want +got):\n%s", diff)
	}
	for name, pair := range map[string][2]string{
		"final":    {got.Final, "done in " + dir},
		"side":     {got.Side, dir},
		"thinking": {got.Replies[0].Thinking, "think " + dir},
		"text":     {got.Replies[0].Text, "text " + dir + " {UNKNOWN}"},
		"input":    {got.Replies[0].ToolCalls[1].Input, "*** Add File: " + dir + "/b\n"},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s = %q, want %q", name, pair[0], pair[1])
		}
	}
	// The original is untouched: Expand copies.
	if s.Replies[0].Text != "text {CWD} {UNKNOWN}" || string(s.Replies[0].ToolCalls[0].Arguments) != `{"file_path":"{CWD}/a.txt","n":1}` {
		t.Errorf("Expand modified its receiver: %+v", s.Replies[0])
	}
}

func TestChunks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want []string
	}{
		{"", 4, nil},
		{"abc", 4, []string{"abc"}},
		{"abcdefgh", 4, []string{"abcd", "efgh"}},
		// "é" is two bytes and must not be split.
		{"abcé", 4, []string{"abc", "é"}},
		{"日本", 4, []string{"日", "本"}},
	} {
		if diff := cmp.Diff(tc.want, chunks(tc.in, tc.n)); diff != "" {
			t.Errorf("chunks(%q, %d) (-want +got):\n%s", tc.in, tc.n, diff)
		}
	}
}
