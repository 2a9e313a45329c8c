package opencode

import (
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory/formattest"
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
var badInputs = []formattest.BadInput{
	// run events
	formattest.Refuse("empty", "", formattest.Malformed(0, "empty file")),
	formattest.Refuse("blank lines", "\n \n", formattest.Malformed(0, "empty file")),
	formattest.Refuse("text before step_start", `{"type":"text","sessionID":"ses_a","part":{"type":"text","text":"x"}}`+"\n",
		formattest.Malformed(1, "text event outside a step (no step_start before it)")),
	formattest.Refuse("tool without callID", stepStart+"\n"+toolUse(`{"type":"tool","tool":"bash","state":{"status":"completed","input":{},"output":""}}`)+"\n",
		formattest.Malformed(2, "tool part has no callID")),
	formattest.Refuse("tool without name", stepStart+"\n"+toolUse(`{"type":"tool","callID":"c1","state":{"status":"completed"}}`)+"\n",
		formattest.Malformed(2, "tool part c1 has no tool name")),
	formattest.Refuse("tool without state", stepStart+"\n"+toolUse(`{"type":"tool","callID":"c1","tool":"bash"}`)+"\n",
		formattest.Malformed(2, "has no state object")),
	formattest.Refuse("unknown tool status", stepStart+"\n"+toolUse(`{"type":"tool","callID":"c1","tool":"bash","state":{"status":"done"}}`)+"\n",
		formattest.Malformed(2, `unknown state.status "done"`)),
	formattest.Refuse("tool input not an object", stepStart+"\n"+toolUse(`{"type":"tool","callID":"c1","tool":"bash","state":{"status":"running","input":"ls"}}`)+"\n",
		formattest.Malformed(2, "state.input is not an object")),
	formattest.Refuse("tool renamed", stepStart+"\n"+toolUse(`{"type":"tool","callID":"c1","tool":"bash","state":{"status":"running"}}`)+"\n"+
		toolUse(`{"type":"tool","callID":"c1","tool":"read","state":{"status":"completed"}}`)+"\n",
		formattest.Malformed(3, `changes its tool from "bash" to "read"`)),
	formattest.Refuse("part of the wrong type", stepStart+"\n"+toolUse(`{"type":"text","text":"x"}`)+"\n",
		formattest.Malformed(2, `tool_use event carries a part of type "text", want "tool"`)),
	formattest.Refuse("step_start without part", `{"type":"step_start","sessionID":"ses_a"}`+"\n",
		formattest.Malformed(1, "step_start event has no part object")),
	formattest.Refuse("two sessions", stepStart+"\n"+strings.Replace(stepEnd, "ses_a", "ses_b", 1)+"\n",
		formattest.Malformed(2, "event of session ses_b, but line 1 began session ses_a")),
	formattest.Refuse("other message in the step", stepStart+"\n"+strings.Replace(stepEnd, "msg_1", "msg_2", 1)+"\n",
		formattest.Malformed(2, "belongs to message msg_2, but the open step is message msg_1")),
	formattest.Refuse("not JSON", stepStart+"\n{\"type\":\n"+stepEnd+"\n", formattest.Malformed(2, "not valid JSON")),
	formattest.Refuse("array line", stepStart+"\n[1,2]\n", formattest.Malformed(2, "expected a JSON object, found an array")),
	formattest.Refuse("bad UTF-8", stepStart+"\n{\"type\":\"text\",\"x\":\"\xff\"}\n", formattest.Malformed(2, "not valid UTF-8")),
	formattest.Refuse("no type", `{"sessionID":"ses_a"}`+"\n", formattest.Malformed(1, `record has no string "type"`)),
	formattest.Refuse("only unknown events", `{"type":"server.heartbeat"}`+"\n", formattest.Malformed(1, "no OpenCode run events")),
	formattest.Refuse("bus event", `{"type":"message.part.updated","properties":{"part":{"type":"text"}}}`+"\n",
		formattest.Unsupported(1, "/event bus (message.part.updated)")),
	// export documents
	formattest.Refuse("export without messages", `{"info": {"id": "ses_a"}}`, formattest.Malformed(1, `the export has no "messages" array`)),
	formattest.Refuse("export without info", `{"messages": []}`, formattest.Malformed(1, `the export has no session "info"`)),
	formattest.Refuse("export info without id", "{\"info\": {\"title\": \"x\"},\n\"messages\": []}", formattest.Malformed(1, "info has no session id")),
	formattest.Refuse("export messages not an array", "{\"info\": {\"id\": \"ses_a\"},\n\"messages\": {}}", formattest.Malformed(2, `"messages" is not an array`)),
	formattest.Refuse("export message without info", exportDoc(userMsg, `{"parts": []}`), formattest.Malformed(5, "messages[1] has no info object")),
	formattest.Refuse("export message without parts", exportDoc(`{"info": {"id": "msg_a", "role": "assistant"}}`), formattest.Malformed(4, "messages[0] has no parts array")),
	formattest.Refuse("export unknown role", exportDoc(`{"info": {"id": "msg_s", "role": "system"}, "parts": []}`), formattest.Malformed(4, `messages[0].info.role is "system"`)),
	formattest.Refuse("export part without id", exportDoc(userMsg, "{\"info\": {\"id\": \"msg_a\", \"role\": \"assistant\"}, \"parts\": [\n{\"id\": \"p1\", \"type\": \"step-start\"},\n{\"type\": \"text\", \"text\": \"x\"}]}"),
		formattest.Malformed(7, "messages[1].parts[1] has no id")),
	formattest.Refuse("export tool without callID", exportDoc(userMsg, "{\"info\": {\"id\": \"msg_a\", \"role\": \"assistant\"}, \"parts\": [\n{\"id\": \"p1\", \"type\": \"step-start\"},\n{\"id\": \"p2\", \"type\": \"tool\", \"tool\": \"bash\", \"state\": {\"status\": \"completed\"}}]}"),
		formattest.Malformed(7, "messages[1].parts[1]: tool part has no callID")),
	formattest.Refuse("export cut short", exportDoc(userMsg)[:75], formattest.Malformed(4, "messages[0]: the document ends early")),
	formattest.Refuse("export syntax error", exportDoc(userMsg, `{"info": {"id": "msg_a", "role": "assistant"}, "parts": [,]}`), formattest.Malformed(5, "messages[1]: not valid JSON")),
	formattest.Refuse("export trailing data", exportDoc(userMsg)+"{}\n", formattest.Malformed(7, "data after the end of the export document")),
}

func TestBadInputs(t *testing.T) { corpus.TestBadInputs(t) }

// FuzzDecode checks that no input panics and that every successful decode
// keeps the model's invariants and cuts after each of its steps.
func FuzzDecode(f *testing.F) { corpus.Fuzz(f, 32<<10, nil) }
