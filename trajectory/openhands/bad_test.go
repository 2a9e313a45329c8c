package openhands

import (
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const (
	userMsg = `{"id":0,"source":"user","action":"message","args":{"content":"task"}}`
	runAct  = `{"id":1,"source":"agent","action":"run","args":{"command":"ls"}}`
	// v1Action is one V1 ActionEvent line.
	v1Action = `{"id":"a1","source":"agent","kind":"ActionEvent","tool_name":"terminal","tool_call_id":"c1","action":{"command":"ls","kind":"TerminalAction"}}`
)

var badInputs = []formattest.BadInput{
	formattest.Refuse("empty", "", formattest.Malformed(0, "the file is empty")),
	formattest.Refuse("blank", "\n \n", formattest.Malformed(0, "the file is empty")),
	formattest.Refuse("not json", "hello", formattest.Malformed(1, "invalid JSON")),
	formattest.Refuse("a string", `"x"`, formattest.Malformed(1, "expected a JSON array of OpenHands events, found a string")),
	formattest.Refuse("empty array", "[\n]", formattest.Malformed(2, "the event array has no events")),
	formattest.Refuse("element not object", "[\n"+userMsg+",\n42]", formattest.Malformed(3, "event 1 is a number, not an object")),
	formattest.Refuse("neither action nor observation", "[\n"+userMsg+",\n{\"id\":1,\"source\":\"agent\"}]", formattest.Malformed(3,
		`event 1 has neither "action" nor "observation"`)),
	formattest.Refuse("both", "[\n"+userMsg+",\n{\"id\":1,\"action\":\"run\",\"observation\":\"run\",\"args\":{}}]", formattest.Malformed(3,
		`event 1 has both "action" and "observation"`)),
	formattest.Refuse("action not string", "[\n"+userMsg+",\n{\"id\":1,\"action\":7,\"args\":{}}]", formattest.Malformed(3,
		`event 1: "action" is a number, not a string`)),
	formattest.Refuse("args not object", "[\n"+userMsg+",\n{\"id\":1,\"source\":\"agent\",\"action\":\"run\",\"args\":\"ls\"}]", formattest.Malformed(3,
		`event 1: "args" is a string, not an object`)),
	formattest.Refuse("id not integer", "[\n"+userMsg+",\n{\"id\":1.5,\"source\":\"agent\",\"action\":\"run\",\"args\":{}}]", formattest.Malformed(3,
		"event 1: id 1.5 is not an integer")),
	formattest.Refuse("cause not id", "[\n"+userMsg+",\n"+runAct+",\n{\"id\":2,\"observation\":\"run\",\"cause\":\"1\",\"content\":\"\"}]",
		formattest.Malformed(4, `event 2: cause "1" is not an event id`)),
	formattest.Refuse("duplicate id", "[\n"+userMsg+",\n"+runAct+",\n"+runAct+"]", formattest.Malformed(4, "event 2: duplicate id 1")),
	formattest.Refuse("string ids", "[\n{\"id\":\"a\",\"source\":\"user\",\"action\":\"message\",\"args\":{}}]", formattest.Malformed(2,
		"id is a string; V0 event ids are integers")),
	formattest.Refuse("truncated", "[\n"+userMsg+",\n"+runAct[:30], formattest.Malformed(3, "the JSON document ends early")),
	formattest.Refuse("syntax error inside an event", "[\n  {\n    \"id\": 0,\n    \"source\": user\n  }\n]", formattest.Malformed(4, "invalid character 'u'")),
	formattest.Refuse("missing comma", "[\n"+userMsg+"\n"+runAct+"]", formattest.Malformed(3, "invalid JSON")),
	formattest.Refuse("trailing data", "[\n"+userMsg+"\n]\n[]", formattest.Malformed(4, "unexpected data after the event array")),
	formattest.Refuse("bad utf-8", "[\n{\"id\":0,\"source\":\"user\",\"action\":\"message\",\"args\":{\"content\":\"\xff\"}}]", formattest.Malformed(2,
		"not valid UTF-8")),
	formattest.Refuse("v1 events in array", `[{"id":"3f2a","timestamp":"t","source":"agent","kind":"ActionEvent"}]`, formattest.Unsupported(1, v1Msg)),
	formattest.Refuse("v1 no kind", `{"id":"3f2a","timestamp":"t","source":"agent"}`+"\n", formattest.Malformed(1, `the event has no "kind" string`)),
	formattest.Refuse("v1 then v0 id", v1Action+"\n"+`{"id":7,"kind":"ObservationEvent"}`+"\n", formattest.Malformed(2,
		"event id 7 is an integer: a V0 event among V1 events")),
	formattest.Refuse("v1 id missing later", v1Action+"\n"+`{"kind":"ObservationEvent"}`+"\n", formattest.Malformed(2, `the event has no "id" string`)),
	formattest.Refuse("v1 id with a path", `{"id":"../../x","source":"agent","kind":"ActionEvent"}`+"\n", formattest.Malformed(1,
		`event id "../../x" holds a path separator`)),
	formattest.Refuse("v1 duplicate id", v1Action+"\n"+v1Action+"\n", formattest.Malformed(2, "duplicate event id a1")),
	// Issue 24: ids that name a directory, or no file name can hold.
	formattest.Refuse("v1 id dot", `{"id":".","source":"agent","kind":"ActionEvent"}`+"\n", formattest.Malformed(1, `event id "." names a directory`)),
	formattest.Refuse("v1 id dotdot", `{"id":"..","source":"agent","kind":"ActionEvent"}`+"\n", formattest.Malformed(1, `event id ".." names a directory`)),
	formattest.Refuse("v1 id 5000 chars", `{"id":"`+strings.Repeat("a", 5000)+`","source":"agent","kind":"ActionEvent"}`+"\n",
		formattest.Malformed(1, "event id of 5000 bytes is longer than the 200")),
	formattest.Refuse("v1 id control", `{"id":"a\u0007b","source":"agent","kind":"ActionEvent"}`+"\n", formattest.Malformed(1, "holds a control character")),
	formattest.Refuse("v1 action without tool", `{"id":"a1","source":"agent","kind":"ActionEvent","action":{}}`+"\n", formattest.Malformed(1,
		`ActionEvent has no "tool_name"`)),
	formattest.Refuse("v1 action not object", `{"id":"a1","source":"agent","kind":"ActionEvent","tool_name":"terminal","action":"ls"}`+"\n",
		formattest.Malformed(1, `ActionEvent "action" is a string, not an object`)),
	formattest.Refuse("v1 only event torn", `{"id":"a1","source":"agent"`, formattest.Malformed(1, "the only event is cut off")),
	formattest.Refuse("v1 bad line", v1Action+"\nnope\n", formattest.Malformed(2, "not valid JSON")),
	formattest.Refuse("v1 base state", "{\n  \"id\": \"11\",\n  \"agent\": {\"llm\": {}},\n  \"execution_status\": \"idle\"\n}\n", formattest.Unsupported(1,
		"base_state.json, which holds no events")),
	formattest.Refuse("v1 pretty event", "{\n  \"id\": \"e1\",\n  \"source\": \"agent\",\n  \"kind\": \"ActionEvent\"\n}\n", formattest.Unsupported(1,
		"a single OpenHands V1 event file")),
	formattest.Refuse("single event file", "{\n  \"id\": 4,\n  \"source\": \"agent\",\n  \"action\": \"run\",\n  \"args\": {}\n}", formattest.Unsupported(1,
		"this is a single OpenHands event")),
	formattest.Refuse("object without history", `{"instance_id":"x","instruction":"y"}`, formattest.Malformed(1, `a JSON object without "history"`)),
	formattest.Refuse("history not array", `{"instance_id":"x","history":{"id":0}}`, formattest.Malformed(1, `history: expected "["`)),
	formattest.Refuse("two instances", `{"instance_id":"a","history":[`+userMsg+`]}`+"\n"+`{"instance_id":"b","history":[]}`+"\n",
		formattest.Unsupported(2, "more than one instance")),
	formattest.Refuse("instance then garbage", `{"instance_id":"a","history":[`+userMsg+`]}`+"\nx", formattest.Malformed(2, "invalid JSON")),
	formattest.Refuse("history empty", `{"instance_id":"a","history":[]}`, formattest.Malformed(1, "history has no events")),
}

func TestBadInputs(t *testing.T) { corpus.TestBadInputs(t) }

// FuzzDecode: no panic, and any successful decode satisfies the invariants
// and writes a prefix for each of its steps, or refuses with a
// *trajectory.Error (legacy events, a history that does not start with the
// user's message).
func FuzzDecode(f *testing.F) {
	corpus.Fuzz(f, 64<<10, func(*trajectory.Trajectory, int) bool { return true })
}
