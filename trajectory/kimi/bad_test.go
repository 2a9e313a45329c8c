package kimi

import (
	"strings"

	"github.com/pvisor/pvisor/trajectory/formattest"
)

func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }

const (
	meta    = `{"type":"metadata","protocol_version":"1.5"}`
	begin   = `{"type":"context.append_loop_event","agentId":"main","event":{"type":"step.begin","uuid":"s1","step":1}}`
	call    = `{"type":"context.append_loop_event","agentId":"main","event":{"type":"tool.call","stepUuid":"s1","toolCallId":"c1","name":"Bash","args":{"command":"ls"}}}`
	result  = `{"type":"context.append_loop_event","agentId":"main","event":{"type":"tool.result","toolCallId":"c1","result":{"output":"a\n"}}}`
	stepEnd = `{"type":"context.append_loop_event","agentId":"main","event":{"type":"step.end","uuid":"s1"}}`
)

// badInputs are decoded by TestBadInputs and seed FuzzDecode.
var badInputs = []formattest.BadInput{
	formattest.Refuse("empty", "", formattest.Malformed(0, "empty file")),
	formattest.Refuse("no metadata", lines(begin), formattest.Malformed(1, `not a Kimi Code wire log: the first record is not {"type":"metadata","protocol_version":…}`)),
	formattest.Refuse("future protocol", lines(`{"type":"metadata","protocol_version":"2.0"}`), formattest.Unsupported(1, "Kimi Code wire protocol 2.0: this pvisor reads protocol 1.x")),
	formattest.Refuse("step begins twice", lines(meta, begin, begin), formattest.Malformed(3, "step s1 begins twice")),
	formattest.Refuse("step without uuid", lines(meta, strings.Replace(begin, `"uuid":"s1",`, "", 1)), formattest.Malformed(2, "step.begin has no uuid")),
	formattest.Refuse("call outside a step", lines(meta, call), formattest.Malformed(2, `tool.call of step "s1", which never began`)),
	formattest.Refuse("call twice", lines(meta, begin, call, call), formattest.Malformed(4, "tool call c1 appears twice")),
	formattest.Refuse("call without name", lines(meta, begin, strings.Replace(call, `"name":"Bash",`, "", 1)), formattest.Malformed(3, "tool.call without toolCallId or name")),
	formattest.Refuse("args not an object", lines(meta, begin, strings.Replace(call, `{"command":"ls"}`, `"ls"`, 1)), formattest.Malformed(3, "tool call c1: args is not an object")),
	formattest.Refuse("result without call", lines(meta, begin, result), formattest.Malformed(3, `tool.result for unknown tool call "c1"`)),
	formattest.Refuse("second result", lines(meta, begin, call, result, result, stepEnd), formattest.Malformed(5, "tool call c1 has two results")),
	formattest.Refuse("event not an object", lines(meta, `{"type":"context.append_loop_event","event":7}`), formattest.Malformed(2, "context.append_loop_event has no event object")),
	formattest.Refuse("not JSON", lines(meta, `{"type":`), formattest.Malformed(2, "not valid JSON")),
	formattest.Refuse("bad UTF-8", lines(meta, "{\"type\":\"x\",\"v\":\"\xfe\"}"), formattest.Malformed(2, "not valid UTF-8")),
}
