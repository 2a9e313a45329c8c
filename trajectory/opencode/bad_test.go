package opencode

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

const (
	stepStart = `{"type":"step_start","timestamp":1,"sessionID":"ses_a","part":{"id":"prt_1","messageID":"msg_1","type":"step-start"}}`
	stepEnd   = `{"type":"step_finish","timestamp":3,"sessionID":"ses_a","part":{"id":"prt_9","messageID":"msg_1","type":"step-finish","reason":"tool-calls"}}`
)

func toolUse(part string) string {
	return `{"type":"tool_use","timestamp":2,"sessionID":"ses_a","part":` + part + `}`
}

// exportDoc builds a pretty-ish export whose message i starts on line 4+i.
func exportDoc(msgs ...string) string {
	return "{\n\"info\": {\"id\": \"ses_a\", \"version\": \"1.1.25\"},\n\"messages\": [\n" + strings.Join(msgs, ",\n") + "\n]\n}\n"
}

const (
	userMsg = `{"info": {"id": "msg_u", "role": "user"}, "parts": [{"id": "prt_u", "type": "text", "text": "hi"}]}`
)

// badInputs are decoded by TestBadInputs and seed FuzzDecode.
var badInputs = []struct {
	name string
	in   string
	want refusal
}{
	// run events
	{"empty", "", refusal{trajectory.Malformed, 0, "empty file"}},
	{"blank lines", "\n \n", refusal{trajectory.Malformed, 0, "empty file"}},
	{"text before step_start", `{"type":"text","sessionID":"ses_a","part":{"type":"text","text":"x"}}` + "\n",
		refusal{trajectory.Malformed, 1, "text event outside a step (no step_start before it)"}},
	{"tool without callID", stepStart + "\n" + toolUse(`{"type":"tool","tool":"bash","state":{"status":"completed","input":{},"output":""}}`) + "\n",
		refusal{trajectory.Malformed, 2, "tool part has no callID"}},
	{"tool without name", stepStart + "\n" + toolUse(`{"type":"tool","callID":"c1","state":{"status":"completed"}}`) + "\n",
		refusal{trajectory.Malformed, 2, "tool part c1 has no tool name"}},
	{"tool without state", stepStart + "\n" + toolUse(`{"type":"tool","callID":"c1","tool":"bash"}`) + "\n",
		refusal{trajectory.Malformed, 2, "has no state object"}},
	{"unknown tool status", stepStart + "\n" + toolUse(`{"type":"tool","callID":"c1","tool":"bash","state":{"status":"done"}}`) + "\n",
		refusal{trajectory.Malformed, 2, `unknown state.status "done"`}},
	{"tool input not an object", stepStart + "\n" + toolUse(`{"type":"tool","callID":"c1","tool":"bash","state":{"status":"running","input":"ls"}}`) + "\n",
		refusal{trajectory.Malformed, 2, "state.input is not an object"}},
	{"tool renamed", stepStart + "\n" + toolUse(`{"type":"tool","callID":"c1","tool":"bash","state":{"status":"running"}}`) + "\n" +
		toolUse(`{"type":"tool","callID":"c1","tool":"read","state":{"status":"completed"}}`) + "\n",
		refusal{trajectory.Malformed, 3, `changes its tool from "bash" to "read"`}},
	{"part of the wrong type", stepStart + "\n" + toolUse(`{"type":"text","text":"x"}`) + "\n",
		refusal{trajectory.Malformed, 2, `tool_use event carries a part of type "text", want "tool"`}},
	{"step_start without part", `{"type":"step_start","sessionID":"ses_a"}` + "\n",
		refusal{trajectory.Malformed, 1, "step_start event has no part object"}},
	{"two sessions", stepStart + "\n" + strings.Replace(stepEnd, "ses_a", "ses_b", 1) + "\n",
		refusal{trajectory.Malformed, 2, "event of session ses_b, but line 1 began session ses_a"}},
	{"other message in the step", stepStart + "\n" + strings.Replace(stepEnd, "msg_1", "msg_2", 1) + "\n",
		refusal{trajectory.Malformed, 2, "belongs to message msg_2, but the open step is message msg_1"}},
	{"not JSON", stepStart + "\n{\"type\":\n" + stepEnd + "\n", refusal{trajectory.Malformed, 2, "not valid JSON"}},
	{"array line", stepStart + "\n[1,2]\n", refusal{trajectory.Malformed, 2, "expected a JSON object, found an array"}},
	{"bad UTF-8", stepStart + "\n{\"type\":\"text\",\"x\":\"\xff\"}\n", refusal{trajectory.Malformed, 2, "not valid UTF-8"}},
	{"no type", `{"sessionID":"ses_a"}` + "\n", refusal{trajectory.Malformed, 1, `record has no string "type"`}},
	{"only unknown events", `{"type":"server.heartbeat"}` + "\n", refusal{trajectory.Malformed, 1, "no OpenCode run events"}},
	{"bus event", `{"type":"message.part.updated","properties":{"part":{"type":"text"}}}` + "\n",
		refusal{trajectory.Unsupported, 1, "/event bus (message.part.updated)"}},
	// export documents
	{"export without messages", `{"info": {"id": "ses_a"}}`, refusal{trajectory.Malformed, 1, `the export has no "messages" array`}},
	{"export without info", `{"messages": []}`, refusal{trajectory.Malformed, 1, `the export has no session "info"`}},
	{"export info without id", "{\"info\": {\"title\": \"x\"},\n\"messages\": []}", refusal{trajectory.Malformed, 1, "info has no session id"}},
	{"export messages not an array", "{\"info\": {\"id\": \"ses_a\"},\n\"messages\": {}}", refusal{trajectory.Malformed, 2, `"messages" is not an array`}},
	{"export message without info", exportDoc(userMsg, `{"parts": []}`), refusal{trajectory.Malformed, 5, "messages[1] has no info object"}},
	{"export message without parts", exportDoc(`{"info": {"id": "msg_a", "role": "assistant"}}`), refusal{trajectory.Malformed, 4, "messages[0] has no parts array"}},
	{"export unknown role", exportDoc(`{"info": {"id": "msg_s", "role": "system"}, "parts": []}`), refusal{trajectory.Malformed, 4, `messages[0].info.role is "system"`}},
	{"export part without id", exportDoc(userMsg, "{\"info\": {\"id\": \"msg_a\", \"role\": \"assistant\"}, \"parts\": [\n{\"id\": \"p1\", \"type\": \"step-start\"},\n{\"type\": \"text\", \"text\": \"x\"}]}"),
		refusal{trajectory.Malformed, 7, "messages[1].parts[1] has no id"}},
	{"export tool without callID", exportDoc(userMsg, "{\"info\": {\"id\": \"msg_a\", \"role\": \"assistant\"}, \"parts\": [\n{\"id\": \"p1\", \"type\": \"step-start\"},\n{\"id\": \"p2\", \"type\": \"tool\", \"tool\": \"bash\", \"state\": {\"status\": \"completed\"}}]}"),
		refusal{trajectory.Malformed, 7, "messages[1].parts[1]: tool part has no callID"}},
	{"export cut short", exportDoc(userMsg)[:75], refusal{trajectory.Malformed, 4, "messages[0]: the document ends early"}},
	{"export syntax error", exportDoc(userMsg, `{"info": {"id": "msg_a", "role": "assistant"}, "parts": [,]}`), refusal{trajectory.Malformed, 5, "messages[1]: not valid JSON"}},
	{"export trailing data", exportDoc(userMsg) + "{}\n", refusal{trajectory.Malformed, 7, "data after the end of the export document"}},
}

func TestBadInputs(t *testing.T) {
	for _, tt := range badInputs {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := New().Decode(strings.NewReader(tt.in), trajectory.Options{})
			if err == nil {
				t.Fatalf("decoded to %d actions, want an error", len(tr.Actions))
			}
			checkErr(t, err, tt.want)
		})
	}
}

// FuzzDecode checks that no input panics and that every successful decode
// keeps the model's invariants.
func FuzzDecode(f *testing.F) {
	for _, path := range inputs(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) <= 32<<10 {
			f.Add(data)
		}
	}
	for _, tt := range badInputs {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
		if err != nil {
			if _, ok := err.(*trajectory.Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		checkInvariants(t, tr, data)
	})
}

func checkInvariants(t *testing.T, tr *trajectory.Trajectory, data []byte) {
	t.Helper()
	n := 0
	for i, a := range tr.Actions {
		if a.Step != 0 {
			n++
			if a.Step != n {
				t.Fatalf("action %d has step %d, want %d", i, a.Step, n)
			}
			for _, c := range a.Calls {
				if c.Observation == nil {
					t.Fatalf("step %d: call %s has no observation", a.Step, c.ID)
				}
			}
		} else if a.Complete() {
			t.Fatalf("action %d is complete but not numbered", i)
		}
		for _, l := range []trajectory.Locator{a.Locator} {
			if l.First > l.Last || l.EndByte > int64(len(data)) || l.StartByte > l.EndByte {
				t.Fatalf("action %d: bad locator %+v", i, l)
			}
		}
	}
	if len(tr.Steps()) != n {
		t.Fatalf("Steps() = %d, numbered %d", len(tr.Steps()), n)
	}
	if n > 0 && trajectory.CheckBoundary(tr, 1) == nil {
		var out bytes.Buffer
		if err := New().WritePrefix(&out, bytes.NewReader(data), int64(len(data)), tr, 1); err != nil {
			t.Fatalf("WritePrefix(1): %v", err)
		}
		pt, err := New().Decode(bytes.NewReader(out.Bytes()), trajectory.Options{})
		if err != nil {
			t.Fatalf("prefix of step 1 does not decode: %v", err)
		}
		if len(pt.Steps()) != 1 {
			t.Fatalf("prefix of step 1 has %d steps", len(pt.Steps()))
		}
	}
}
