package pi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/rawjson"
)

// message is the part of a pi AgentMessage the model needs: an assistant
// response or a tool result. Other roles (user, bashExecution, custom,
// branchSummary, compactionSummary) are not actions and are skipped.
type message struct {
	role string // "assistant" or "toolResult"
	// assistant
	text, reasoning string
	calls           []trajectory.ToolCall
	stop            string
	// toolResult
	callID, toolName, content string
	isError                   bool
	// dates is what the result's shape says of the release that wrote
	// it (see evidence).
	dates evidence
}

// The members decodeSession, parseMessage, readBlocks and contentText read; rawjson steps
// over the others without unescaping them.
var (
	entryKeys     = []string{"type", "id", "parentId", "message"}
	messageKeys   = []string{"role", "content", "stopReason", "toolCallId", "toolName", "isError", "details"}
	blockKeys     = []string{"type", "text", "thinking", "id", "name", "arguments"}
	textBlockKeys = []string{"type", "text"}
)

// parseMessage reads an AgentMessage; ok is false for roles that are not
// actions or results. A non-empty problem says what is wrong with it.
// Each level is walked once with ForEach: result and tool-call lines hold
// long strings that every separate lookup would scan again.
// A lean parse (DecodePrefix past the boundary) checks the same things but
// keeps no text, reasoning or arguments.
func parseMessage(m gjson.Result, loc trajectory.Locator, skipContent, lean bool) (msg message, ok bool, problem string) {
	if !m.IsObject() {
		return msg, false, "message is not an object"
	}
	var role, content, details gjson.Result
	var callID, toolName, stop string
	rawjson.EachOf(m, messageKeys, func(k, v gjson.Result) bool {
		switch k.Str {
		case "role":
			role = v
		case "content":
			content = v
		case "stopReason":
			stop = v.Str
		case "toolCallId":
			if v.Type == gjson.String {
				callID = v.Str
			}
		case "toolName":
			toolName = v.Str
		case "isError":
			msg.isError = v.Bool()
		case "details":
			details = v
		}
		return true
	})
	if role.Type != gjson.String || role.Str == "" {
		return msg, false, "message has no role"
	}
	switch role.Str {
	case "assistant":
		msg.role = "assistant"
		msg.stop = strings.Clone(stop)
		if !content.IsArray() {
			return msg, false, "assistant message content is not an array"
		}
		problem = msg.readBlocks(content, loc, lean)
		return msg, problem == "", problem
	case "toolResult":
		msg.role = "toolResult"
		if callID == "" {
			return msg, false, "toolResult has no toolCallId"
		}
		msg.callID = strings.Clone(callID)
		msg.toolName = strings.Clone(toolName)
		if !skipContent {
			msg.content = contentText(content)
		}
		msg.dates = resultEvidence(toolName, content, details, msg.isError)
		return msg, true, ""
	}
	return msg, false, ""
}

// readBlocks reads an assistant message's text, thinking and toolCall blocks.
func (msg *message) readBlocks(content gjson.Result, loc trajectory.Locator, lean bool) (problem string) {
	var texts, thoughts []string
	rawjson.Each(content, func(k, b gjson.Result) bool {
		var typ, id, name, txt, args gjson.Result
		rawjson.EachOf(b, blockKeys, func(bk, v gjson.Result) bool {
			switch bk.Str {
			case "type":
				typ = v
			case "text", "thinking":
				txt = v
			case "id":
				id = v
			case "name":
				name = v
			case "arguments":
				args = v
			}
			return true
		})
		switch typ.Str {
		case "text":
			if !lean {
				texts = append(texts, txt.Str)
			}
		case "thinking":
			if txt.Str != "" && !lean {
				thoughts = append(thoughts, txt.Str)
			}
		case "toolCall":
			idx := int(k.Num)
			if id.Type != gjson.String || id.Str == "" {
				problem = fmt.Sprintf("content[%d]: toolCall has no id", idx)
				return false
			}
			if name.Type != gjson.String || name.Str == "" {
				problem = fmt.Sprintf("content[%d]: toolCall %s has no name", idx, clip(id.Str))
				return false
			}
			raw := json.RawMessage(`{}`)
			switch {
			case args.IsObject() && lean:
				raw = nil
			case args.IsObject():
				// pi writes lines with JSON.stringify, so the raw text is
				// already compact; copying beats re-compacting large inputs.
				raw = json.RawMessage(args.Raw)
			case args.Exists() && args.Type != gjson.Null:
				problem = fmt.Sprintf("content[%d]: toolCall %s arguments are not an object", idx, clip(id.Str))
				return false
			}
			for _, c := range msg.calls {
				if c.ID == id.Str {
					problem = fmt.Sprintf("content[%d]: toolCall id %s is used twice in one message", idx, clip(id.Str))
					return false
				}
			}
			msg.calls = append(msg.calls, trajectory.ToolCall{ID: strings.Clone(id.Str),
				Name: strings.Clone(name.Str), Arguments: raw, Locator: loc})
		}
		return true
	})
	if !lean {
		msg.text = joinClone(texts)
		msg.reasoning = joinClone(thoughts)
	}
	return problem
}

// contentText is what the model sees of a result: a plain string, or the
// text blocks of a content array joined with "\n" (image blocks carry no
// text and are left out).
func contentText(c gjson.Result) string {
	if c.Type == gjson.String {
		return strings.Clone(c.Str)
	}
	var texts []string
	rawjson.Each(c, func(_, b gjson.Result) bool {
		var typ, txt gjson.Result
		rawjson.EachOf(b, textBlockKeys, func(k, v gjson.Result) bool {
			switch k.Str {
			case "type":
				typ = v
			case "text":
				txt = v
			}
			return true
		})
		if typ.Str == "text" {
			texts = append(texts, txt.Str)
		}
		return true
	})
	return joinClone(texts)
}

func joinClone(ss []string) string {
	if len(ss) == 1 {
		return strings.Clone(ss[0])
	}
	return strings.Join(ss, "\n")
}

// linker builds Actions from messages in conversation order and pairs each
// toolResult with a call of the latest assistant message.
type linker struct {
	t       *trajectory.Trajectory
	cur     int            // index of the latest assistant Action, -1 before any
	stop    string         // its stopReason
	pending map[string]int // toolCallId → index in Actions[cur].Calls
	// merge lets a result be reported more than once (an event stream has
	// tool_execution_end, a toolResult message_end and turn_end for each).
	merge bool
}

func newLinker(t *trajectory.Trajectory, merge bool) *linker {
	return &linker{t: t, cur: -1, pending: map[string]int{}, merge: merge}
}

func (k *linker) assistant(m *message, loc trajectory.Locator) {
	k.finish()
	k.t.Actions = append(k.t.Actions, trajectory.Action{Text: m.text, Reasoning: m.reasoning,
		Calls: m.calls, Locator: loc})
	k.cur, k.stop = len(k.t.Actions)-1, m.stop
	clear(k.pending)
	for i, c := range m.calls {
		k.pending[c.ID] = i
	}
}

// result attaches a tool result; problem is non-empty when it cannot.
func (k *linker) result(m *message, loc trajectory.Locator) (problem string) {
	i, ok := k.pending[m.callID]
	if !ok {
		if k.merge {
			return "" // the turn_end or message that carries its call may follow
		}
		return fmt.Sprintf("toolResult for %s matches no toolCall of the preceding assistant message", clip(m.callID))
	}
	a := &k.t.Actions[k.cur]
	c := &a.Calls[i]
	if m.toolName != "" && m.toolName != c.Name {
		return fmt.Sprintf("toolResult for %s names tool %q, but the call was %q", clip(m.callID), clip(m.toolName), clip(c.Name))
	}
	a.Locator = a.Locator.Extend(loc)
	if c.Observation != nil {
		if !k.merge {
			return fmt.Sprintf("second toolResult for %s", clip(m.callID))
		}
		c.Observation.Locator = c.Observation.Locator.Extend(loc)
		return ""
	}
	c.Observation = &trajectory.Observation{Content: m.content, IsError: m.isError, Locator: loc}
	return ""
}

// finish settles the latest response once no more results can come. pi
// never runs the tool calls of a response that ended "aborted" or "error",
// and leaves such responses out of later requests; when none of the calls
// got a result they are dropped, so the response counts as text-only
// instead of an incomplete batch that would block every later boundary.
func (k *linker) finish() {
	if k.cur < 0 || (k.stop != "aborted" && k.stop != "error") {
		return
	}
	a := &k.t.Actions[k.cur]
	for _, c := range a.Calls {
		if c.Observation != nil {
			return
		}
	}
	a.Calls = nil
}
