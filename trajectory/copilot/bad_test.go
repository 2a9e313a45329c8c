package copilot

import (
	"strings"

	"github.com/pvisor/pvisor/trajectory/formattest"
)

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

const (
	start  = `{"type":"session.start","data":{"sessionId":"s1","version":1,"producer":"copilot-agent","copilotVersion":"1.0.102","context":{"cwd":"/w"}}}`
	call   = `{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"c1","name":"bash","arguments":{"command":"ls"}}]}}`
	result = `{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true,"result":{"content":"ok"}}}`
)

var badInputs = []formattest.BadInput{
	formattest.Refuse("empty", "", formattest.Malformed(0, "no events: the file is empty")),
	formattest.Refuse("not first session.start", lines(call), formattest.Malformed(1, `the first event is "assistant.message", not session.start`)),
	formattest.Refuse("no type", lines(`{"data":{}}`), formattest.Malformed(1, `the event has no "type" string`)),
	formattest.Refuse("data not object", lines(start, `{"type":"user.message","data":3}`), formattest.Malformed(2, "user.message event: data is not an object")),
	formattest.Refuse("no session id", lines(`{"type":"session.start","data":{"version":1}}`), formattest.Malformed(1, `session.start has no "sessionId" string`)),
	formattest.Refuse("future version", lines(`{"type":"session.start","data":{"sessionId":"s","version":2}}`), formattest.Unsupported(1, "session.start version 2")),
	formattest.Refuse("two starts", lines(start, start), formattest.Malformed(2, "a second session.start")),
	formattest.Refuse("requests not array", lines(start, `{"type":"assistant.message","data":{"toolRequests":{}}}`), formattest.Malformed(2, "toolRequests is not an array")),
	formattest.Refuse("request without id", lines(start, `{"type":"assistant.message","data":{"toolRequests":[{"name":"bash"}]}}`), formattest.Malformed(2, "tool request 0 has no toolCallId")),
	formattest.Refuse("request without name", lines(start, `{"type":"assistant.message","data":{"toolRequests":[{"toolCallId":"c"}]}}`), formattest.Malformed(2, `tool request "c" has no name`)),
	formattest.Refuse("id twice", lines(start, call, result, call), formattest.Malformed(4, `tool call id "c1" is used twice`)),
	formattest.Refuse("orphan result", lines(start, result), formattest.Malformed(2, `call "c1" answers no tool request`)),
	formattest.Refuse("second result", lines(start, call, result, result), formattest.Malformed(4, `call "c1" has a result already`)),
	formattest.Refuse("content a number", lines(start, `{"type":"assistant.message","data":{"content":1}}`), formattest.Malformed(2, "content is not a string")),
	formattest.Refuse("compacted", lines(start, `{"type":"session.compaction_complete","data":{}}`), formattest.Unsupported(2, "Copilot replaced the earlier history")),
}
