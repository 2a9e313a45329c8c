package codex

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const (
	meta  = `{"timestamp":"2026-01-01T00:00:00.000Z","type":"session_meta","payload":{"id":"019e0000-0000-7000-8000-000000000001","cwd":"/w","originator":"codex_exec","cli_version":"0.171.0","source":"exec"}}`
	user  = `{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}`
	uevt  = `{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"go"}}`
	tok   = `{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}`
	think = `{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"**Plan**"}],"content":null,"encrypted_content":"gAAAA"}}`
)

func fc(id, name, args string) string {
	a, _ := json.Marshal(args)
	return `{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"` + name + `","arguments":` + string(a) + `,"call_id":"` + id + `"}}`
}

func out(id, output string) string {
	o, _ := json.Marshal(output)
	return `{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"` + id + `","output":` + string(o) + `}}`
}

func say(text string) string {
	return `{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + text + `"}]}}`
}

func rollout(lines ...string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

func TestBadInputs(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		kind trajectory.Kind
		line int
		want string
	}{
		{"empty", nil, trajectory.Malformed, 0, "no records"},
		{"blank lines only", []byte("\n \n\n"), trajectory.Malformed, 0, "no records"},
		{"not json", rollout(meta, `{"timestamp":"t","type":`), trajectory.Malformed, 2, "not valid JSON"},
		{"array line", rollout(meta, `[1,2]`), trajectory.Malformed, 2, "expected a JSON object, found an array"},
		{"invalid utf8", rollout(meta, "{\"type\":\"event_msg\",\"payload\":{\"x\":\"\xff\"}}"), trajectory.Malformed, 2, "not valid UTF-8"},
		{"no session_meta", rollout(user, fc("c1", "shell", `{"command":["ls"]}`)), trajectory.Malformed, 1, "not session_meta"},
		{"no type", rollout(meta, `{"timestamp":"t","payload":{}}`), trajectory.Malformed, 2, `no string "type"`},
		{"response_item without payload", rollout(meta, `{"timestamp":"t","type":"response_item"}`), trajectory.Malformed, 2, `response_item record has no "payload" object`},
		{"item without type", rollout(meta, `{"timestamp":"t","type":"response_item","payload":{"role":"user"}}`), trajectory.Malformed, 2, `payload has no string "type"`},
		{"output without call", rollout(meta, user, fc("c1", "shell", `{"command":["ls"]}`), out("c2", "x")), trajectory.Malformed, 4,
			`function_call_output for call_id "c2" has no earlier call with that id`},
		{"output before call", rollout(meta, user, out("c1", "x"), fc("c1", "shell", `{"command":["ls"]}`)), trajectory.Malformed, 3, "no earlier call"},
		{"duplicate call id", rollout(meta, user, fc("c1", "shell", `{}`), out("c1", "x"), fc("c1", "shell", `{}`)), trajectory.Malformed, 5,
			"call_id c1 is used again (first call at line 3)"},
		{"second output", rollout(meta, user, fc("c1", "shell", `{}`), out("c1", "x"), out("c1", "y")), trajectory.Malformed, 5,
			"second function_call_output for call_id c1 (the first is at line 4)"},
		{"call without call_id", rollout(meta, `{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}"}}`),
			trajectory.Malformed, 2, "function_call has no call_id"},
		{"call without name", rollout(meta, `{"timestamp":"t","type":"response_item","payload":{"type":"function_call","arguments":"{}","call_id":"c1"}}`),
			trajectory.Malformed, 2, "function_call c1 has no name"},
		{"custom call input not a string", rollout(meta, `{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":{"x":1}}}`),
			trajectory.Malformed, 2, `custom_tool_call has no string "input"`},
		{"local_shell_call without action", rollout(meta, `{"timestamp":"t","type":"response_item","payload":{"type":"local_shell_call","call_id":"c1","status":"completed"}}`),
			trajectory.Malformed, 2, `local_shell_call has no "action" object`},
		{"forked with history_base", rollout(`{"timestamp":"t","type":"session_meta","payload":{"id":"b","cli_version":"0.171.0","history_base":{"thread_id":"019e-parent","ordinal":12}}}`, user),
			trajectory.Unsupported, 1, "forked rollouts are not supported: session_meta.history_base points at parent thread 019e-parent"},
		{"forked hint", rollout(`{"timestamp":"t","type":"session_meta","payload":{"id":"b","history_base":{"thread_id":"p"}}}`),
			trajectory.Unsupported, 1, "(replay the parent rollout instead)"},
		{"forked_from_id later", rollout(meta, user, `{"timestamp":"t","type":"session_meta","payload":{"id":"c","forked_from_id":"019e-parent"}}`),
			trajectory.Unsupported, 3, "forked rollouts are not supported: session_meta.forked_from_id is 019e-parent"},
		{"exec json stream", rollout(`{"type":"thread.started","thread_id":"019a2d7a"}`, `{"type":"turn.started"}`),
			trajectory.Unsupported, 1, "rollout-<timestamp>-019a2d7a.jsonl"},
		{"legacy bare records", rollout(`{"id":"5973b6c0","timestamp":"2025-05-01T00:00:00Z","instructions":null}`, `{"record_type":"state"}`),
			trajectory.Unsupported, 1, "Codex 0.2x or older"},
		{"legacy typescript json", rollout(`{"session":{"id":"x"},"items":[]}`), trajectory.Unsupported, 1, "legacy TypeScript Codex CLI"},
		{"other agent's file", rollout(`{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/w"}`), trajectory.Malformed, 1,
			`the first record is "session", not session_meta`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := decodeBytes(t, tt.data)
			if tr != nil {
				t.Errorf("got a trajectory with an error")
			}
			checkErr(t, err, tt.kind, tt.line, tt.want)
			formattest.CheckDecodePrefix(t, New(), tt.data, trajectory.Options{}, 1)
		})
	}
}

// Tool-only responses stay separate, parallel calls are one batch whatever
// order their outputs come in, and a text-only response is kept.
func TestResponseSplitting(t *testing.T) {
	data := rollout(meta, user, uevt, tok,
		think, fc("a", "exec_command", `{"cmd":"ls"}`), fc("b", "exec_command", `{"cmd":"pwd"}`), tok,
		out("b", "Chunk ID: 1\nWall time: 0 seconds\nProcess exited with code 0\nOutput:\n/w\n"),
		out("a", "Chunk ID: 2\nWall time: 0 seconds\nProcess exited with code 2\nOutput:\nls: x\n"),
		fc("c", "write_stdin", `{"session_id":1,"chars":""}`), tok, out("c", "done"),
		fc("d", "update_plan", `{"plan":[]}`), out("d", PlanUpdated),
		say("All done."), tok, `{"timestamp":"t","type":"event_msg","payload":{"type":"task_complete"}}`,
		user, uevt, say("Again?"), tok, uevt, say("Yes."),
		`{"timestamp":"t","type":"response_item","payload":{"type":"local_shell_call","call_id":"e","status":"completed","action":{"type":"exec","command":["ls"]}}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"e","output":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:"},{"type":"input_text","text":"b"}]}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call","status":"completed","call_id":"f","name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n"}}`,
		fc("g", "shell", `{"command":["ls"]}`),
		`{"timestamp":"t","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"f","output":"Exit code: 1\nWall time: 0 seconds\nOutput:\nfailed\n"}}`,
		out("g", `{"output":"x\n","metadata":{"exit_code":0,"duration_seconds":0.1}}`),
		fc("h", "shell", `{"command":["sleep","9"]}`),
		`{"timestamp":"t","type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}`,
		user, fc("i", "shell", `{"command":["true"]}`), out("i", ""),
		`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"`)
	data = data[:len(data)-1] // torn tail: the last line has no newline
	tr, err := decodeBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	type act struct {
		Step      int
		Text      string
		Reasoning string
		Calls     []string
	}
	var got []act
	for _, a := range tr.Actions {
		g := act{Step: a.Step, Text: a.Text, Reasoning: a.Reasoning}
		for _, c := range a.Calls {
			s := c.ID + ":" + c.Name + "(" + string(c.Arguments) + ")"
			if c.Observation != nil {
				s += "=" + c.Observation.Content
				if c.Observation.IsError {
					s += "!"
				}
			}
			g.Calls = append(g.Calls, s)
		}
		got = append(got, g)
	}
	want := []act{
		{Step: 1, Reasoning: "**Plan**", Calls: []string{
			`a:exec_command({"cmd":"ls"})=Chunk ID: 2` + "\nWall time: 0 seconds\nProcess exited with code 2\nOutput:\nls: x\n!",
			`b:exec_command({"cmd":"pwd"})=Chunk ID: 1` + "\nWall time: 0 seconds\nProcess exited with code 0\nOutput:\n/w\n"}},
		{Step: 2, Calls: []string{`c:write_stdin({"session_id":1,"chars":""})=done`}},
		{Step: 3, Calls: []string{`d:update_plan({"plan":[]})=Plan updated`}},
		{Text: "All done."},
		{Text: "Again?"},
		{Step: 4, Text: "Yes.", Calls: []string{`e:local_shell_call({"type":"exec","command":["ls"]})=a` + "\nb"}},
		{Step: 5, Calls: []string{
			`f:apply_patch("*** Begin Patch\n*** End Patch\n")=Exit code: 1` + "\nWall time: 0 seconds\nOutput:\nfailed\n!",
			`g:shell({"command":["ls"]})={"output":"x\n","metadata":{"exit_code":0,"duration_seconds":0.1}}`}},
		{Calls: []string{`h:shell({"command":["sleep","9"]})`}},
		{Step: 6, Calls: []string{`i:shell({"command":["true"]})=`}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	if tr.TornTail == nil || tr.TornTail.Line != 36 {
		t.Errorf("torn tail = %+v, want line 36", tr.TornTail)
	}
	if tr.Version != "0.171.0" || tr.SessionID != "019e0000-0000-7000-8000-000000000001" || tr.Lines != 36 {
		t.Errorf("version %q session %q lines %d", tr.Version, tr.SessionID, tr.Lines)
	}
	if err := trajectory.CheckBoundary(tr, 6); err == nil || !strings.Contains(err.Error(), "tool call h (shell) before the boundary has no result") {
		t.Errorf("boundary past the interrupted call: %v", err)
	}
	if n := New().PrefixModelTurns(tr, 5); n != 7 {
		t.Errorf("PrefixModelTurns(5) = %d, want 7", n)
	}
	var buf bytes.Buffer
	if err := New().WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, 5); err != nil {
		t.Fatal(err)
	}
	if want := rollout(strings.Split(string(data), "\n")[:30]...); !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("prefix of step 5 ends at %q", buf.Bytes()[max(0, buf.Len()-40):])
	}
}

func TestLateOutput(t *testing.T) {
	data := rollout(meta, user, fc("a", "shell", `{"command":["ls"]}`), tok, say("meanwhile"), out("a", "x"))
	_, err := decodeBytes(t, data)
	checkErr(t, err, trajectory.Malformed, 6, "function_call_output for call_id a (called at line 3) comes after a later model response began at line 5")
}
