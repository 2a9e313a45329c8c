package miniswe

import (
	"testing"

	"github.com/pvisor/pvisor/trajectory/formattest"
)

const (
	sys  = `{"role":"system","content":"s"}`
	task = `{"role":"user","content":"task"}`
	asst = `{"role":"assistant","content":"x","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}`
)

func doc11(msgs string) string {
	return "{\n\"info\": {\"mini_version\": \"2.4.6\"},\n\"messages\": [\n" + msgs + "\n],\n\"trajectory_format\": \"mini-swe-agent-1.1\"\n}"
}

var badInputs = []formattest.BadInput{
	formattest.Refuse("empty", "", formattest.Malformed(0, "the file is empty")),
	formattest.Refuse("not json", "mini", formattest.Malformed(1, "invalid JSON")),
	formattest.Refuse("a number", "42", formattest.Malformed(1, "expected a mini-swe-agent trajectory (a JSON object), found a number")),
	formattest.Refuse("no messages", `{"info":{"mini_version":"1.15.0"},"trajectory_format":"mini-swe-agent-1"}`, formattest.Malformed(1,
		`the trajectory has no "messages"`)),
	formattest.Refuse("messages not array", "{\n\"messages\": {\"role\": \"user\"}\n}", formattest.Malformed(2, `messages: expected "["`)),
	formattest.Refuse("message not object", doc11(sys+",\n\"hello\""), formattest.Malformed(5, "message 1 is a string, not an object")),
	formattest.Refuse("no role", doc11(sys+",\n{\"content\":\"x\"}"), formattest.Malformed(5, `message 1 has no "role" string`)),
	formattest.Refuse("content a number", doc11(sys+",\n{\"role\":\"user\",\"content\":7}"), formattest.Malformed(5,
		"message 1: content is a number, not a string or a list of parts")),
	formattest.Refuse("tool_calls not array", doc11(sys+",\n"+task+",\n{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":{}}"),
		formattest.Malformed(6, "message 2: tool_calls is an object, not an array")),
	formattest.Refuse("tool call without id", doc11(sys+",\n"+task+",\n{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"bash\"}}]}"),
		formattest.Malformed(6, "message 2: tool call 0 has no id")),
	formattest.Refuse("tool result for unknown call", doc11(sys+",\n"+task+",\n"+asst+",\n{\"role\":\"tool\",\"tool_call_id\":\"call_9\",\"content\":\"\"}"),
		formattest.Malformed(7, `message 3: tool result "call_9" answers no pending tool call of message 2`)),
	formattest.Refuse("orphan tool result", doc11(sys+",\n"+task+",\n{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"\"}"),
		formattest.Malformed(6, `message 2: tool result "call_1" follows no assistant message`)),
	formattest.Refuse("extra.actions without command", doc11(sys+",\n"+task+",\n{\"role\":\"assistant\",\"content\":\"\",\"extra\":{\"actions\":[{\"cmd\":\"ls\"}]}}"),
		formattest.Malformed(6, `message 2: extra.actions[0] has no "command" string`)),
	formattest.Refuse("unknown format", `{"messages":[],"trajectory_format":"mini-swe-agent-2"}`, formattest.Unsupported(1,
		`trajectory_format "mini-swe-agent-2" is not supported`)),
	formattest.Refuse("format not string", "{\"messages\":[],\n\"trajectory_format\":2}", formattest.Malformed(2, "trajectory_format is a number, not a string")),
	formattest.Refuse("regex RE2 cannot compile", `{"info":{"config":{"agent":{"action_regex":"(?<=x)y"}}},"messages":[],"trajectory_format":"mini-swe-agent-1"}`,
		formattest.Unsupported(0, "uses syntax Go's regexp does not support")),
	formattest.Refuse("truncated", doc11(sys + ",\n" + task)[:60], formattest.Malformed(4, "the JSON document ends early")),
	formattest.Refuse("trailing data", doc11(sys)+"\n{}", formattest.Malformed(8, "unexpected data after the trajectory")),
	formattest.Refuse("two messages keys", `{"messages":[],"messages":[]}`, formattest.Malformed(1, `two "messages" keys`)),
	formattest.Refuse("bad utf-8", doc11("{\"role\":\"user\",\"content\":\"\xfe\"}"), formattest.Malformed(4, "not valid UTF-8")),
	formattest.Refuse("responses output not array", doc11(sys+",\n"+task+",\n{\"object\":\"response\",\"output\":7}"), formattest.Malformed(6,
		"the response's output is a number, not an array")),
}

func TestBadInputs(t *testing.T) { corpus.TestBadInputs(t) }

// FuzzDecode: no panic, and any successful decode satisfies the invariants
// and writes a prefix of each of its steps that decodes to that many steps.
func FuzzDecode(f *testing.F) { corpus.Fuzz(f, 64<<10, nil) }
