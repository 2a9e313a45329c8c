package openhands

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// firstLines is the head of a JSONL file: a rebuilt prefix ends after a
// step's last result, like these.
func firstLines(t *testing.T, path string, n int) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	return bytes.Join(lines[:n], nil)
}

// TestProjectionMatchesSDKRequest compares the projection with the
// messages openhands-sdk 1.58.2 itself sent to a model when it resumed the
// recorded conversation (captured by the runner against a loopback
// server): commands with exit codes, file edits, an editor error, a
// parallel batch.
func TestProjectionMatchesSDKRequest(t *testing.T) {
	for _, tc := range []struct {
		lines int
		want  string
	}{
		{30, "testdata/projection/ohsdk_generated_1.58.2.after-13.messages.json"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			got, err := Projection(bytes.NewReader(firstLines(t, generated, tc.lines)))
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			var want []any
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			var gotv []any
			for _, m := range got {
				var v any
				if err := json.Unmarshal(m, &v); err != nil {
					t.Fatal(err)
				}
				gotv = append(gotv, v)
			}
			if d := cmp.Diff(want, gotv); d != "" {
				t.Errorf("projection differs from the SDK's request (-sdk +pvisor):\n%s", d)
			}
		})
	}
}

func TestProjectionRefuses(t *testing.T) {
	sys := `{"id":"s","kind":"SystemPromptEvent","system_prompt":{"type":"text","text":"S"},"tools":[]}` + "\n"
	for name, tc := range map[string]struct{ events, want string }{
		"condensed": {sys + `{"id":"c","kind":"Condensation","forgotten_event_ids":[]}`, "condensed"},
		"browser":   {sys + `{"id":"o","kind":"ObservationEvent","tool_name":"browser","tool_call_id":"x","observation":{"kind":"BrowserObservation","content":[]}}`, "BrowserObservation"},
		"image":     {sys + `{"id":"m","kind":"MessageEvent","source":"user","llm_message":{"role":"user","content":[{"type":"image","image_urls":["data:"]}]}}`, "image"},
		"long":      {sys + `{"id":"o","kind":"ObservationEvent","tool_name":"terminal","tool_call_id":"x","observation":{"kind":"TerminalObservation","content":[{"type":"text","text":"` + strings.Repeat("é", terminalRenderLimit) + `"}],"metadata":{"exit_code":0}}}`, "renders to 30036"},
		"cut off":   {sys + `{"id":"m","kind":"MessageEv`, "cut off"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Projection(strings.NewReader(tc.events))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestProjectionRules covers what the recorded conversation does not: two
// user messages in a row (one turn), a blank thought (no content), an agent
// error and a rejection as tool results, a dynamic context, a cache mark on
// a result, a reply without tool calls.
func TestProjectionRules(t *testing.T) {
	for name, tc := range map[string]struct{ events, want string }{
		"user turns merge": {
			`{"id":"s","kind":"SystemPromptEvent","system_prompt":{"type":"text","text":"S"},"dynamic_context":{"type":"text","text":"D"},"tools":[]}
{"id":"u1","kind":"MessageEvent","source":"user","llm_message":{"role":"user","content":[{"type":"text","text":"a"}]}}
{"id":"u2","kind":"MessageEvent","source":"user","llm_message":{"role":"user","content":[{"type":"text","text":"b"}]},"extended_content":[{"type":"text","text":"x"}]}
{"id":"st","kind":"ConversationStateUpdateEvent","key":"execution_status","value":"running"}`,
			`[{"role":"system","content":[{"type":"text","text":"S"},{"type":"text","text":"D"}]},
{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":"x"}]}]`,
		},
		"blank thought, errors": {
			`{"id":"a1","kind":"ActionEvent","thought":[{"type":"text","text":" \n"}],"tool_name":"terminal","tool_call_id":"c1","tool_call":{"id":"c1","name":"terminal","arguments":"{}"},"llm_response_id":"r1"}
{"id":"a2","kind":"ActionEvent","thought":[],"tool_name":"file_editor","tool_call_id":"c2","tool_call":{"id":"c2","name":"file_editor","arguments":"{\"x\":1}"},"llm_response_id":"r1"}
{"id":"e1","kind":"AgentErrorEvent","tool_name":"terminal","tool_call_id":"c1","error":"bad args"}
{"id":"e2","kind":"UserRejectObservation","tool_name":"file_editor","tool_call_id":"c2","rejection_reason":"no","action_id":"a2"}
{"id":"a3","kind":"ActionEvent","thought":[{"type":"text","text":"t"}],"tool_name":"think","tool_call_id":"c3","tool_call":{"id":"c3","name":"think","arguments":"{}"},"llm_response_id":"r2"}
{"id":"o3","kind":"ObservationEvent","tool_name":"think","tool_call_id":"c3","observation":{"kind":"ThinkObservation","is_error":true,"content":[{"type":"text","text":"ok","cache_prompt":true}]},"action_id":"a3"}
{"id":"m","kind":"MessageEvent","source":"agent","llm_message":{"role":"assistant","content":[]}}`,
			`[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"file_editor","arguments":"{\"x\":1}"}}]},
{"role":"tool","content":[{"type":"text","text":"bad args"}],"tool_call_id":"c1","name":"terminal"},
{"role":"tool","content":[{"type":"text","text":"Action rejected: no"}],"tool_call_id":"c2","name":"file_editor"},
{"role":"assistant","content":[{"type":"text","text":"t"}],"tool_calls":[{"id":"c3","type":"function","function":{"name":"think","arguments":"{}"}}]},
{"role":"tool","content":[{"type":"text","text":"[An error occurred during execution.]\n"},{"type":"text","text":"ok"}],"tool_call_id":"c3","name":"think","cache_control":{"type":"ephemeral"}},
{"role":"assistant","content":""}]`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Projection(strings.NewReader(tc.events))
			if err != nil {
				t.Fatal(err)
			}
			var want, gotv []any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if err := json.Unmarshal(b, &gotv); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, gotv); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
