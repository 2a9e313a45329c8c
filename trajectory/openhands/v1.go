package openhands

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// FormatV1Events is a JSONL of OpenHands V1 (software-agent-sdk) events, one
// event per line: what `jq -c . events/event-*.json` makes of a persisted
// conversation's events folder, and what SDK tools export.
const FormatV1Events = "v1-events"

// v1JoinHint says how to turn a conversation folder into what Decode reads.
const v1JoinHint = "pass the conversation's events as JSONL, one event per line: jq -c . <conversation>/events/event-*.json > events.jsonl"

// V1 tool names (ActionEvent.tool_name) the replay knows.
const (
	ToolTerminal   = "terminal"
	ToolFileEditor = "file_editor"
	ToolThinkV1    = "think"
	ToolFinishV1   = "finish"
)

// isV1Start reports whether the stream starting with head is V1: an object
// whose "id" is a string (V0 ids are integers). Only the first line is
// looked at, and "id" comes first in every V1 event, so a first event
// longer than the head (a system prompt with its tools) is still seen.

// maxV1EventID bounds a V1 event id: it becomes part of a file name
// (event-NNNNN-<id>.json) of at most 255 bytes.
const maxV1EventID = 200

func isV1Start(head []byte) bool {
	first, head := jsondoc.First(head)
	if first != '{' {
		return false
	}
	if i := bytes.IndexByte(head, '\n'); i >= 0 && len(bytes.TrimSpace(head[:i])) > 1 {
		head = head[:i]
	}
	return gjson.GetBytes(head, "id").Type == gjson.String && !gjson.GetBytes(head, "history").Exists()
}

// v1Decoder pairs V1 actions with their observations, line by line.
type v1Decoder struct {
	opts    trajectory.Options
	t       *trajectory.Trajectory
	ids     map[string]bool
	byEvent map[string]callRef // action event id -> its call
	byCall  map[string]callRef // tool_call_id -> its call, for AgentErrorEvent
	open    int                // Actions index still collecting parallel calls, or -1
	resp    string             // llm_response_id of Actions[open]
}

func decodeV1(br *bufio.Reader, head []byte, opts trajectory.Options) (*trajectory.Trajectory, error) {
	d := &v1Decoder{
		opts:    opts,
		t:       &trajectory.Trajectory{Agent: AgentName, Format: FormatV1Events},
		ids:     map[string]bool{},
		byEvent: map[string]callRef{},
		byCall:  map[string]callRef{},
		open:    -1,
	}
	jr := jsonl.NewReader(br)
	for jr.Next() {
		l := jr.Line()
		if err := d.event(l); err != nil {
			return nil, err
		}
	}
	if err := jr.Err(); err != nil {
		if len(d.ids) == 0 {
			return nil, v1NotJSONL(head, err)
		}
		return nil, err
	}
	d.t.TornTail = jr.Torn()
	d.t.Lines = jr.Lines()
	if len(d.ids) == 0 {
		if jr.Torn() != nil {
			return nil, v1NotJSONL(head, trajectory.Errorf(1, "the only event is cut off"))
		}
		return nil, trajectory.Errorf(0, "the file holds no events")
	}
	d.t.NumberSteps()
	return d.t, nil
}

// v1NotJSONL explains a V1 document that is not one event per line: a
// conversation's base_state.json, or one pretty-printed event file.
func v1NotJSONL(head []byte, err error) error {
	switch {
	case isV1BaseState(head):
		return &trajectory.Error{Kind: trajectory.Unsupported, Line: 1,
			Msg: "this is an OpenHands V1 conversation's base_state.json, which holds no events", Hint: v1JoinHint}
	case gjson.GetBytes(head, "kind").Exists() || bytes.Contains(head, []byte(`"kind"`)):
		return &trajectory.Error{Kind: trajectory.Unsupported, Line: 1,
			Msg: "this is a single OpenHands V1 event file, not a conversation", Hint: v1JoinHint}
	}
	return err
}

func (d *v1Decoder) event(l jsonl.Line) error {
	ev := gjson.ParseBytes(l.Data)
	id, kind, source := ev.Get("id"), ev.Get("kind"), ev.Get("source")
	switch {
	case id.Type != gjson.String || id.Str == "":
		if id.Type == gjson.Number {
			return trajectory.Errorf(l.N, "event id %s is an integer: a V0 event among V1 events", id.Raw)
		}
		return trajectory.Errorf(l.N, "the event has no \"id\" string")
	case strings.ContainsAny(id.Str, "/\\\x00"):
		// The SDK stores each event in a file named after its id: no event
		// it wrote has one of these, and the continuation writes the
		// rebuilt events into such files.
		return trajectory.Errorf(l.N, "event id %q holds a path separator or NUL, which no OpenHands event file name can", id.Str)
	case id.Str == "." || id.Str == "..":
		return trajectory.Errorf(l.N, "event id %q names a directory, which no OpenHands event file name can", id.Str)
	case len(id.Str) > maxV1EventID:
		// A file name holds 255 bytes, and the SDK's adds a prefix and
		// suffix; its own ids are 36-character UUIDs.
		return trajectory.Errorf(l.N, "event id of %d bytes is longer than the %d an OpenHands event file name can hold", len(id.Str), maxV1EventID)
	case strings.ContainsFunc(id.Str, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return trajectory.Errorf(l.N, "event id %q holds a control character, which no OpenHands event id has", id.Str)
	case kind.Type != gjson.String:
		if isV1BaseState(l.Data) {
			return &trajectory.Error{Kind: trajectory.Unsupported, Line: l.N,
				Msg: "this is an OpenHands V1 conversation's base_state.json, which holds no events", Hint: v1JoinHint}
		}
		return trajectory.Errorf(l.N, "the event has no \"kind\" string")
	case d.ids[id.Str]:
		return trajectory.Errorf(l.N, "duplicate event id %s", id.Str)
	}
	d.ids[strings.Clone(id.Str)] = true
	loc := trajectory.Locator{Unit: "line", First: l.N, Last: l.N, StartByte: l.Offset, EndByte: l.End}
	switch kind.Str {
	case "ActionEvent":
		return d.action(ev, l.N, loc)
	case "ObservationEvent", "UserRejectObservation":
		d.observation(ev, ev.Get("action_id").Str, d.byEvent, loc)
	case "AgentErrorEvent":
		d.observation(ev, ev.Get("tool_call_id").Str, d.byCall, loc)
	case "MessageEvent":
		if source.Str == "agent" {
			d.t.Actions = append(d.t.Actions, trajectory.Action{
				Text: strings.Clone(partsText(ev.Get("llm_message.content"))), Locator: loc})
		}
		d.open = -1 // a message ends any parallel batch
	}
	// SystemPromptEvent, ConversationStateUpdateEvent, Condensation, … are
	// the conversation's own bookkeeping, not model output.
	return nil
}

func (d *v1Decoder) action(ev gjson.Result, line int, loc trajectory.Locator) error {
	name := ev.Get("tool_name")
	if name.Type != gjson.String || name.Str == "" {
		return trajectory.Errorf(line, "ActionEvent has no \"tool_name\"")
	}
	callID := ev.Get("tool_call_id").Str
	if callID == "" {
		callID = ev.Get("id").Str
	}
	args := json.RawMessage("{}")
	if a := ev.Get("action"); a.IsObject() {
		args = json.RawMessage(strings.Clone(a.Raw))
	} else if a.Exists() && a.Type != gjson.Null {
		return trajectory.Errorf(line, "ActionEvent \"action\" is %s, not an object", jsondoc.Kind(a))
	}
	c := trajectory.ToolCall{ID: strings.Clone(callID), Name: strings.Clone(name.Str), Arguments: args, Locator: loc}
	resp := ev.Get("llm_response_id").Str
	if resp != "" && d.open >= 0 && d.open == len(d.t.Actions)-1 && d.resp == resp {
		a := &d.t.Actions[d.open]
		a.Calls = append(a.Calls, c)
		a.Locator = a.Locator.Extend(loc)
	} else {
		d.t.Actions = append(d.t.Actions, trajectory.Action{
			Text:      strings.Clone(partsText(ev.Get("thought"))),
			Reasoning: strings.Clone(ev.Get("reasoning_content").String()),
			Calls:     []trajectory.ToolCall{c},
			Locator:   loc,
		})
		d.open, d.resp = len(d.t.Actions)-1, strings.Clone(resp)
	}
	ref := callRef{action: d.open, call: len(d.t.Actions[d.open].Calls) - 1}
	d.byEvent[strings.Clone(ev.Get("id").Str)] = ref
	d.byCall[c.ID] = ref
	return nil
}

// observation attaches the result to its call; one that answers no known
// call (its action was trimmed from the file, or was never valid) is not
// part of any step.
func (d *v1Decoder) observation(ev gjson.Result, key string, index map[string]callRef, loc trajectory.Locator) {
	ref, ok := index[key]
	if !ok || key == "" {
		return
	}
	c := &d.t.Actions[ref.action].Calls[ref.call]
	if c.Observation != nil {
		return // the first answer is what the model saw
	}
	o := &trajectory.Observation{IsError: v1IsError(ev), Locator: loc}
	if !d.opts.SkipObservationContent {
		o.Content = strings.Clone(v1Content(ev))
	}
	c.Observation = o
	a := &d.t.Actions[ref.action]
	a.Locator = a.Locator.Extend(loc)
	if d.t.Cwd == "" {
		d.t.Cwd = startDir(c, ev.Get("observation.metadata.working_dir").Str)
	}
}

// startDir is the directory the agent's terminal started in, as far as a
// command result tells: the directory a command that does not cd ended in.
// V1 files record no workspace otherwise; V0 files record it only here too.
func startDir(c *trajectory.ToolCall, wd string) string {
	if wd == "" || !strings.HasPrefix(wd, "/") {
		return ""
	}
	cmd := " " + gjson.GetBytes(c.Arguments, "command").Str
	for _, cd := range []string{" cd ", ";cd ", "&cd ", "|cd ", "pushd", "\ncd "} {
		if strings.Contains(cmd, cd) {
			return ""
		}
	}
	if strings.Contains(cmd, "\n") && strings.Contains(cmd, "cd ") {
		return ""
	}
	return strings.Clone(wd)
}

// v1Content is the model-visible text of a result event.
func v1Content(ev gjson.Result) string {
	switch ev.Get("kind").Str {
	case "UserRejectObservation":
		return ev.Get("rejection_reason").String()
	case "AgentErrorEvent":
		return ev.Get("error").String()
	}
	return partsText(ev.Get("observation.content"))
}

// v1IsError: errors, rejections, results flagged is_error, and commands
// that exited non-zero (as for V0).
func v1IsError(ev gjson.Result) bool {
	switch ev.Get("kind").Str {
	case "UserRejectObservation", "AgentErrorEvent":
		return true
	}
	o := ev.Get("observation")
	if o.Get("is_error").Bool() {
		return true
	}
	if code := o.Get("exit_code"); code.Type == gjson.Number {
		return code.Int() != 0
	}
	return false
}

// partsText joins the text parts of a content list (a plain string is its
// own text).
func partsText(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	var b strings.Builder
	v.ForEach(func(_, p gjson.Result) bool {
		if p.Get("type").Str == "text" {
			b.WriteString(p.Get("text").Str)
		}
		return true
	})
	return b.String()
}

// writeV1 writes the event lines up to the last result of step afterStep,
// without the events of later responses, each passed through edit with its
// line number.
func writeV1(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int, edit func(int, []byte) []byte) error {
	a, _ := t.Step(afterStep)
	later := laterEvents(t, afterStep, a.Locator.Last)
	jr := jsonl.NewReader(io.NewSectionReader(src, 0, size))
	bw := bufio.NewWriterSize(w, 64<<10)
	for jr.Next() {
		l := jr.Line()
		if l.N > a.Locator.Last {
			break
		}
		if later[l.N] {
			continue
		}
		bw.Write(edit(l.N, l.Data))
		bw.WriteByte('\n')
	}
	if err := jr.Err(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the OpenHands prefix: %w", err)
	}
	return nil
}
