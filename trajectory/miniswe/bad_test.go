package miniswe

import (
	"bytes"
	"os"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

const (
	sys  = `{"role":"system","content":"s"}`
	task = `{"role":"user","content":"task"}`
	asst = `{"role":"assistant","content":"x","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}`
)

func doc11(msgs string) string {
	return "{\n\"info\": {\"mini_version\": \"2.4.6\"},\n\"messages\": [\n" + msgs + "\n],\n\"trajectory_format\": \"mini-swe-agent-1.1\"\n}"
}

var badInputs = []struct {
	name string
	src  string
	kind trajectory.Kind
	line int
	want string
}{
	{"empty", "", trajectory.Malformed, 0, "the file is empty"},
	{"not json", "mini", trajectory.Malformed, 1, "invalid JSON"},
	{"a number", "42", trajectory.Malformed, 1, "expected a mini-swe-agent trajectory (a JSON object), found a number"},
	{"no messages", `{"info":{"mini_version":"1.15.0"},"trajectory_format":"mini-swe-agent-1"}`, trajectory.Malformed, 1,
		`the trajectory has no "messages"`},
	{"messages not array", "{\n\"messages\": {\"role\": \"user\"}\n}", trajectory.Malformed, 2, `messages: expected "["`},
	{"message not object", doc11(sys + ",\n\"hello\""), trajectory.Malformed, 5, "message 1 is a string, not an object"},
	{"no role", doc11(sys + ",\n{\"content\":\"x\"}"), trajectory.Malformed, 5, `message 1 has no "role" string`},
	{"content a number", doc11(sys + ",\n{\"role\":\"user\",\"content\":7}"), trajectory.Malformed, 5,
		"message 1: content is a number, not a string or a list of parts"},
	{"tool_calls not array", doc11(sys + ",\n" + task + ",\n{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":{}}"),
		trajectory.Malformed, 6, "message 2: tool_calls is an object, not an array"},
	{"tool call without id", doc11(sys + ",\n" + task + ",\n{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"bash\"}}]}"),
		trajectory.Malformed, 6, "message 2: tool call 0 has no id"},
	{"tool result for unknown call", doc11(sys + ",\n" + task + ",\n" + asst + ",\n{\"role\":\"tool\",\"tool_call_id\":\"call_9\",\"content\":\"\"}"),
		trajectory.Malformed, 7, `message 3: tool result "call_9" answers no pending tool call of message 2`},
	{"orphan tool result", doc11(sys + ",\n" + task + ",\n{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"\"}"),
		trajectory.Malformed, 6, `message 2: tool result "call_1" follows no assistant message`},
	{"extra.actions without command", doc11(sys + ",\n" + task + ",\n{\"role\":\"assistant\",\"content\":\"\",\"extra\":{\"actions\":[{\"cmd\":\"ls\"}]}}"),
		trajectory.Malformed, 6, `message 2: extra.actions[0] has no "command" string`},
	{"unknown format", `{"messages":[],"trajectory_format":"mini-swe-agent-2"}`, trajectory.Unsupported, 1,
		`trajectory_format "mini-swe-agent-2" is not supported`},
	{"format not string", "{\"messages\":[],\n\"trajectory_format\":2}", trajectory.Malformed, 2, "trajectory_format is a number, not a string"},
	{"regex RE2 cannot compile", `{"info":{"config":{"agent":{"action_regex":"(?<=x)y"}}},"messages":[],"trajectory_format":"mini-swe-agent-1"}`,
		trajectory.Unsupported, 0, "uses syntax Go's regexp does not support"},
	{"truncated", doc11(sys + ",\n" + task)[:60], trajectory.Malformed, 4, "the JSON document ends early"},
	{"trailing data", doc11(sys) + "\n{}", trajectory.Malformed, 8, "unexpected data after the trajectory"},
	{"two messages keys", `{"messages":[],"messages":[]}`, trajectory.Malformed, 1, `two "messages" keys`},
	{"bad utf-8", doc11("{\"role\":\"user\",\"content\":\"\xfe\"}"), trajectory.Malformed, 4, "not valid UTF-8"},
	{"responses output not array", doc11(sys + ",\n" + task + ",\n{\"object\":\"response\",\"output\":7}"), trajectory.Malformed, 6,
		"the response's output is a number, not an array"},
}

func TestBadInputs(t *testing.T) {
	for _, tt := range badInputs {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := decodeBytes(t, []byte(tt.src))
			if err == nil {
				t.Fatalf("decoded %q into %d actions", tt.src, len(tr.Actions))
			}
			checkErr(t, err, tt.kind, tt.line, tt.want)
		})
	}
}

// FuzzDecode: no panic, and any successful decode satisfies the invariants
// and writes a prefix of each of its steps that decodes to that many steps.
func FuzzDecode(f *testing.F) {
	for _, tt := range badInputs {
		f.Add([]byte(tt.src))
	}
	for _, path := range corpusFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) < 64<<10 {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
		if err != nil {
			if _, ok := err.(*trajectory.Error); !ok {
				t.Fatalf("error is %T, not *trajectory.Error: %v", err, err)
			}
			return
		}
		if err := invariants(tr); err != nil {
			t.Fatal(err)
		}
		for i := range tr.Steps() {
			var buf bytes.Buffer
			if err := New().WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, i+1); err != nil {
				t.Fatalf("WritePrefix step %d: %v", i+1, err)
			}
			pt, err := New().Decode(bytes.NewReader(buf.Bytes()), trajectory.Options{})
			if err != nil {
				t.Fatalf("prefix of step %d does not decode: %v", i+1, err)
			}
			if len(pt.Steps()) != i+1 {
				t.Fatalf("prefix of step %d has %d steps", i+1, len(pt.Steps()))
			}
		}
	})
}
