package pi

import (
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory/formattest"
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
var badInputs = []formattest.BadInput{
	formattest.Refuse("empty", "", formattest.Malformed(0, "empty file")),
	formattest.Refuse("header without id", lines(`{"type":"session","version":3,"cwd":"/w"}`), formattest.Malformed(1, "session header has no id")),
	formattest.Refuse("version is a string", lines(`{"type":"session","version":"3","id":"x"}`), formattest.Malformed(1, `session header version "3" is not a positive integer`)),
	formattest.Refuse("future version", lines(`{"type":"session","version":4,"id":"x"}`), formattest.Unsupported(1, "pi session format version 4 is newer than pvisor knows (1-3)")),
	formattest.Refuse("no header", lines(v3("a1", "", callMsg)), formattest.Malformed(1, "pi session file has no header (the first line is a message entry)")),
	formattest.Refuse("unknown first record", lines(`{"type":"hello"}`), formattest.Malformed(1, `not a pi session file or event stream: first record has type "hello"`)),
	formattest.Refuse("v3 entry without id", lines(hdr3, `{"type":"model_change","parentId":null,"provider":"p"}`), formattest.Malformed(2, "model_change entry has no id")),
	formattest.Refuse("v3 duplicate id", lines(hdr3, v3("a1", "", callMsg), v3("a1", "a1", resMsg)), formattest.Malformed(3, "entry id a1 is used twice")),
	formattest.Refuse("v3 unknown parent", lines(hdr3, v3("a1", "zz", callMsg)), formattest.Malformed(2, "parentId zz names no earlier entry")),
	formattest.Refuse("v3 numeric parent", lines(hdr3, `{"type":"label","id":"a1","parentId":7}`), formattest.Malformed(2, "parentId is neither a string nor null")),
	formattest.Refuse("result without call", lines(hdr1, v1(resMsg)), formattest.Malformed(2, "toolResult for c1 matches no toolCall of the preceding assistant message")),
	formattest.Refuse("second result", lines(hdr1, v1(callMsg), v1(resMsg), v1(resMsg)), formattest.Malformed(4, "second toolResult for c1")),
	formattest.Refuse("result names another tool", lines(hdr1, v1(callMsg), v1(strings.Replace(resMsg, `"toolName":"bash"`, `"toolName":"read"`, 1))),
		formattest.Malformed(3, `toolResult for c1 names tool "read", but the call was "bash"`)),
	formattest.Refuse("result without toolCallId", lines(hdr1, v1(callMsg), v1(`{"role":"toolResult","content":[]}`)), formattest.Malformed(3, "toolResult has no toolCallId")),
	formattest.Refuse("toolCall without id", lines(hdr1, v1(`{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"toolCall","name":"bash"}]}`)),
		formattest.Malformed(2, "content[1]: toolCall has no id")),
	formattest.Refuse("toolCall without name", lines(hdr1, v1(`{"role":"assistant","content":[{"type":"toolCall","id":"c1"}]}`)), formattest.Malformed(2, "toolCall c1 has no name")),
	formattest.Refuse("arguments not an object", lines(hdr1, v1(`{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":"ls"}]}`)),
		formattest.Malformed(2, "toolCall c1 arguments are not an object")),
	formattest.Refuse("duplicate call id", lines(hdr1, v1(`{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash"},{"type":"toolCall","id":"c1","name":"read"}]}`)),
		formattest.Malformed(2, "toolCall id c1 is used twice in one message")),
	formattest.Refuse("content not an array", lines(hdr1, v1(`{"role":"assistant","content":"hi"}`)), formattest.Malformed(2, "assistant message content is not an array")),
	formattest.Refuse("message without role", lines(hdr1, v1(`{"content":[]}`)), formattest.Malformed(2, "message has no role")),
	formattest.Refuse("second header", lines(hdr1, v1(callMsg), hdr1), formattest.Malformed(3, "a second session header")),
	formattest.Refuse("event in a session", lines(hdr3, v3("a1", "", callMsg), `{"type":"message_end","message":`+resMsg+`}`), formattest.Malformed(3, "message_end event in a session file")),
	formattest.Refuse("entry in an event stream", lines(`{"type":"agent_start"}`, v1(callMsg)), formattest.Malformed(2, "message session entry in an event stream")),
	formattest.Refuse("turn_end without assistant", lines(`{"type":"agent_start"}`, `{"type":"turn_end","message":{"role":"user","content":"x"},"toolResults":[]}`),
		formattest.Malformed(2, "turn_end carries no assistant message")),
	formattest.Refuse("turn_end result of another kind", lines(`{"type":"turn_end","message":`+callMsg+`,"toolResults":[{"role":"user","content":"x"}]}`),
		formattest.Malformed(1, "turn_end: toolResults holds a message that is not a toolResult")),
	formattest.Refuse("tool_execution_end without id", lines(`{"type":"message_end","message":`+callMsg+`}`, `{"type":"tool_execution_end","result":{}}`),
		formattest.Malformed(2, "tool_execution_end has no toolCallId")),
	formattest.Refuse("not JSON", lines(hdr1, `{"type":"message",`, v1(callMsg)), formattest.Malformed(2, "not valid JSON")),
	formattest.Refuse("bad UTF-8", lines(hdr1, "{\"type\":\"message\",\"x\":\"\xfe\"}"), formattest.Malformed(2, "not valid UTF-8")),
}

func TestBadInputs(t *testing.T) { corpus.TestBadInputs(t) }

// FuzzDecode checks that no input panics and that every successful decode
// keeps the model's invariants and cuts after each of its steps.
func FuzzDecode(f *testing.F) { corpus.Fuzz(f, 32<<10, nil) }
