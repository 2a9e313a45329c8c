package openhands

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

func TestV1Content(t *testing.T) {
	_, tr := formattest.DecodeFile(t, New(), corpusDir+"/ohsdk_goal_events.jsonl")
	if tr.Format != FormatV1Events || len(tr.Steps()) != 2 {
		t.Fatalf("format %s, %d steps", tr.Format, len(tr.Steps()))
	}
	a := tr.Actions[0]
	c := a.Calls[0]
	if c.ID != "chatcmpl-tool-9d0341c7a033ae28" || c.Name != ToolTerminal || !strings.Contains(string(c.Arguments), `"kind":"TerminalAction"`) {
		t.Errorf("call = %s %s %.80s", c.ID, c.Name, c.Arguments)
	}
	if !strings.HasPrefix(a.Text, "<think>Let me analyze the task.") || !strings.HasPrefix(a.Reasoning, "Let me analyze the task.") {
		t.Errorf("text %.40q reasoning %.40q", a.Text, a.Reasoning)
	}
	// is_error: the terminal refused two commands at once.
	if o := c.Observation; !o.IsError || !strings.HasPrefix(o.Content, "Cannot execute multiple commands at once.") {
		t.Errorf("observation = %+v", o)
	}
	// exit code 1 with is_error false is still an error, as in V0.
	if o := tr.Actions[1].Calls[0].Observation; !o.IsError || o.Locator.First != 10 {
		t.Errorf("second observation = %+v", o.Locator)
	}
}

// Parallel calls share llm_response_id; an AgentErrorEvent answers its call
// by tool_call_id; an agent MessageEvent is a text-only response.
func TestV1Shapes(t *testing.T) {
	src := strings.Join([]string{
		`{"id":"s0","source":"agent","kind":"SystemPromptEvent","system_prompt":{"type":"text","text":"sys"}}`,
		`{"id":"u1","source":"user","kind":"MessageEvent","llm_message":{"role":"user","content":[{"type":"text","text":"task"}]}}`,
		`{"id":"a1","source":"agent","kind":"ActionEvent","thought":[{"type":"text","text":"two at once"}],"tool_name":"terminal","tool_call_id":"c1","llm_response_id":"r1","action":{"command":"ls","kind":"TerminalAction"}}`,
		`{"id":"a2","source":"agent","kind":"ActionEvent","thought":[],"tool_name":"file_editor","tool_call_id":"c2","llm_response_id":"r1","action":{"command":"view","path":"/w","kind":"FileEditorAction"}}`,
		`{"id":"o1","source":"environment","kind":"ObservationEvent","tool_name":"terminal","tool_call_id":"c1","action_id":"a1","observation":{"content":[{"type":"text","text":"a.txt"}],"is_error":false,"exit_code":0,"kind":"TerminalObservation"}}`,
		`{"id":"e2","source":"agent","kind":"AgentErrorEvent","tool_name":"file_editor","tool_call_id":"c2","error":"no such path"}`,
		`{"id":"m1","source":"agent","kind":"MessageEvent","llm_message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}`,
		`{"id":"a3","source":"agent","kind":"ActionEvent","thought":[],"tool_name":"finish","tool_call_id":"c3","llm_response_id":"r3","action":{"message":"bye","kind":"FinishAction"}}`,
		`{"id":"o3","source":"environment","kind":"ObservationEvent","tool_name":"finish","tool_call_id":"c3","action_id":"a3","observation":{"content":[{"type":"text","text":"bye"}],"kind":"FinishObservation"}}`,
	}, "\n") + "\n"
	tr, err := decodeBytes(t, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := formattest.Summary(tr)
	want := `agent=openhands version="" session="" format=v1-events lines=9 actions=3 steps=2
#1 step=1 complete=true line 3-6 text=11 calls=[terminal(c1)@3->5 file_editor(c2)@4->6!]
#2 step=0 complete=false line 7-7 text=4 calls=[]
#3 step=2 complete=true line 8-9 text=0 calls=[finish(c3)@8->9]
`
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if o := tr.Actions[0].Calls[1].Observation; o.Content != "no such path" {
		t.Errorf("error content = %q", o.Content)
	}
	// finish is a complete step, but the replay never crosses it.
	if stale := trajectory.CheckPrefixTools(New(), tr, 2); len(stale) != 1 || stale[0].Step != 2 {
		t.Errorf("stale = %v", stale)
	}
	// The prefix after step 1 keeps the lines up to the error, verbatim.
	var buf bytes.Buffer
	if err := New().WritePrefix(&buf, strings.NewReader(src), int64(len(src)), tr, 1); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(src, "\n")
	if d := cmp.Diff(strings.Join(lines[:6], ""), buf.String()); d != "" {
		t.Errorf("prefix (-want +got):\n%s", d)
	}
}

// A later response's action written before this step's last observation
// stays out of the prefix.
func TestV1WritePrefixInterleaved(t *testing.T) {
	src := strings.Join([]string{
		`{"id":"a1","source":"agent","kind":"ActionEvent","tool_name":"terminal","tool_call_id":"c1","llm_response_id":"r1","action":{"command":"sleep 1"}}`,
		`{"id":"a2","source":"agent","kind":"ActionEvent","tool_name":"terminal","tool_call_id":"c2","llm_response_id":"r2","action":{"command":"ls"}}`,
		`{"id":"o1","source":"environment","kind":"ObservationEvent","action_id":"a1","observation":{"content":"","kind":"TerminalObservation"}}`,
		`{"id":"o2","source":"environment","kind":"ObservationEvent","action_id":"a2","observation":{"content":"x","kind":"TerminalObservation"}}`,
	}, "\n") + "\n"
	tr, err := decodeBytes(t, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := New().WritePrefix(&buf, strings.NewReader(src), int64(len(src)), tr, 1); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(src, "\n")
	if d := cmp.Diff(lines[0]+lines[2], buf.String()); d != "" {
		t.Errorf("prefix (-want +got):\n%s", d)
	}
	if got := trajectory.PrefixExt(New(), tr); got != "jsonl" {
		t.Errorf("prefix extension %q", got)
	}
}
