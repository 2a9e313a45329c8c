package pi

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

const (
	hdr3 = `{"type":"session","version":3,"id":"019f","timestamp":"t","cwd":"/w"}`
	hdr1 = `{"type":"session","id":"d703","timestamp":"t","cwd":"/w","provider":"p","modelId":"m"}`
)

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// v3 builds a message entry.
func v3(id, parent, msg string) string {
	p := `null`
	if parent != "" {
		p = `"` + parent + `"`
	}
	return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"t","message":` + msg + `}`
}

func v1(msg string) string { return `{"type":"message","timestamp":"t","message":` + msg + `}` }

const (
	callMsg = `{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}],"stopReason":"toolUse"}`
	resMsg  = `{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"ok"}],"isError":false}`
)

// badInputs are decoded by TestBadInputs and seed FuzzDecode.
var badInputs = []struct {
	name string
	in   string
	want refusal
}{
	{"empty", "", refusal{trajectory.Malformed, 0, "empty file"}},
	{"header without id", lines(`{"type":"session","version":3,"cwd":"/w"}`), refusal{trajectory.Malformed, 1, "session header has no id"}},
	{"version is a string", lines(`{"type":"session","version":"3","id":"x"}`), refusal{trajectory.Malformed, 1, `session header version "3" is not a positive integer`}},
	{"future version", lines(`{"type":"session","version":4,"id":"x"}`), refusal{trajectory.Unsupported, 1, "pi session format version 4 is newer than pvisor knows (1-3)"}},
	{"no header", lines(v3("a1", "", callMsg)), refusal{trajectory.Malformed, 1, "pi session file has no header (the first line is a message entry)"}},
	{"unknown first record", lines(`{"type":"hello"}`), refusal{trajectory.Malformed, 1, `not a pi session file or event stream: first record has type "hello"`}},
	{"v3 entry without id", lines(hdr3, `{"type":"model_change","parentId":null,"provider":"p"}`), refusal{trajectory.Malformed, 2, "model_change entry has no id"}},
	{"v3 duplicate id", lines(hdr3, v3("a1", "", callMsg), v3("a1", "a1", resMsg)), refusal{trajectory.Malformed, 3, "entry id a1 is used twice"}},
	{"v3 unknown parent", lines(hdr3, v3("a1", "zz", callMsg)), refusal{trajectory.Malformed, 2, "parentId zz names no earlier entry"}},
	{"v3 numeric parent", lines(hdr3, `{"type":"label","id":"a1","parentId":7}`), refusal{trajectory.Malformed, 2, "parentId is neither a string nor null"}},
	{"result without call", lines(hdr1, v1(resMsg)), refusal{trajectory.Malformed, 2, "toolResult for c1 matches no toolCall of the preceding assistant message"}},
	{"second result", lines(hdr1, v1(callMsg), v1(resMsg), v1(resMsg)), refusal{trajectory.Malformed, 4, "second toolResult for c1"}},
	{"result names another tool", lines(hdr1, v1(callMsg), v1(strings.Replace(resMsg, `"toolName":"bash"`, `"toolName":"read"`, 1))),
		refusal{trajectory.Malformed, 3, `toolResult for c1 names tool "read", but the call was "bash"`}},
	{"result without toolCallId", lines(hdr1, v1(callMsg), v1(`{"role":"toolResult","content":[]}`)), refusal{trajectory.Malformed, 3, "toolResult has no toolCallId"}},
	{"toolCall without id", lines(hdr1, v1(`{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"toolCall","name":"bash"}]}`)),
		refusal{trajectory.Malformed, 2, "content[1]: toolCall has no id"}},
	{"toolCall without name", lines(hdr1, v1(`{"role":"assistant","content":[{"type":"toolCall","id":"c1"}]}`)), refusal{trajectory.Malformed, 2, "toolCall c1 has no name"}},
	{"arguments not an object", lines(hdr1, v1(`{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":"ls"}]}`)),
		refusal{trajectory.Malformed, 2, "toolCall c1 arguments are not an object"}},
	{"duplicate call id", lines(hdr1, v1(`{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash"},{"type":"toolCall","id":"c1","name":"read"}]}`)),
		refusal{trajectory.Malformed, 2, "toolCall id c1 is used twice in one message"}},
	{"content not an array", lines(hdr1, v1(`{"role":"assistant","content":"hi"}`)), refusal{trajectory.Malformed, 2, "assistant message content is not an array"}},
	{"message without role", lines(hdr1, v1(`{"content":[]}`)), refusal{trajectory.Malformed, 2, "message has no role"}},
	{"second header", lines(hdr1, v1(callMsg), hdr1), refusal{trajectory.Malformed, 3, "a second session header"}},
	{"event in a session", lines(hdr3, v3("a1", "", callMsg), `{"type":"message_end","message":`+resMsg+`}`), refusal{trajectory.Malformed, 3, "message_end event in a session file"}},
	{"entry in an event stream", lines(`{"type":"agent_start"}`, v1(callMsg)), refusal{trajectory.Malformed, 2, "message session entry in an event stream"}},
	{"turn_end without assistant", lines(`{"type":"agent_start"}`, `{"type":"turn_end","message":{"role":"user","content":"x"},"toolResults":[]}`),
		refusal{trajectory.Malformed, 2, "turn_end carries no assistant message"}},
	{"turn_end result of another kind", lines(`{"type":"turn_end","message":` + callMsg + `,"toolResults":[{"role":"user","content":"x"}]}`),
		refusal{trajectory.Malformed, 1, "turn_end: toolResults holds a message that is not a toolResult"}},
	{"tool_execution_end without id", lines(`{"type":"message_end","message":`+callMsg+`}`, `{"type":"tool_execution_end","result":{}}`),
		refusal{trajectory.Malformed, 2, "tool_execution_end has no toolCallId"}},
	{"not JSON", lines(hdr1, `{"type":"message",`, v1(callMsg)), refusal{trajectory.Malformed, 2, "not valid JSON"}},
	{"bad UTF-8", lines(hdr1, "{\"type\":\"message\",\"x\":\"\xfe\"}"), refusal{trajectory.Malformed, 2, "not valid UTF-8"}},
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
		l := a.Locator
		if l.Unit != "line" || l.First > l.Last || l.EndByte > int64(len(data)) || l.StartByte > l.EndByte {
			t.Fatalf("action %d: bad locator %+v", i, l)
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
