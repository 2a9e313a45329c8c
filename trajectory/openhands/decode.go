package openhands

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// v1Msg is the refusal for OpenHands ≥ 1.0 (software-agent-sdk) events
// in a container pvisor does not read them from (a JSON array).
const v1Msg = "OpenHands V1 events are read one per line (JSONL), not from a JSON array"

const v1Hint = "jq -c '.[]' FILE > events.jsonl"

// Decode reads a V0 event array, or the first and only line of an
// evaluation output.jsonl. A multi-instance output.jsonl is refused rather
// than silently reduced to its first instance: a replay of the wrong instance
// in a sandbox prepared for another would look like a real result, and
// extracting one line is a one-liner the error spells out.
func (format) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	if opts.Instance != "" {
		return decodeInstance(r, opts)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(64 << 10)
	if isV1Start(head) {
		return decodeV1(br, head, opts)
	}
	r = br
	d := &decoder{
		Doc:     jsondoc.New(r),
		opts:    opts,
		t:       &trajectory.Trajectory{Agent: AgentName},
		ids:     map[int64]bool{},
		pending: map[int64]callRef{},
		open:    -1,
		last:    callRef{action: -1},
	}
	if err := d.run(); err != nil {
		return nil, err
	}
	d.t.NumberSteps()
	return d.t, nil
}

type callRef struct{ action, call int }

type decoder struct {
	*jsondoc.Doc
	opts    trajectory.Options
	t       *trajectory.Trajectory
	ids     map[int64]bool
	pending map[int64]callRef // action event id -> its call
	open    int               // Actions index still collecting parallel calls, or -1
	resp    string            // model_response.id of Actions[open]
	last    callRef           // legacy: the call of the previous event, answered by adjacency
	nEvents int
	legacy  bool
	sawMsg  bool
}

func (d *decoder) run() error {
	tok, err := d.Open()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('['):
		if err := d.events("the event array"); err != nil {
			return err
		}
		d.t.Format = pick(d.legacy, FormatLegacyEvents, FormatEvents)
		return d.End("the event array")
	case json.Delim('{'):
		return d.instance()
	}
	return &trajectory.Error{Kind: trajectory.Malformed, Line: 1,
		Msg:  fmt.Sprintf("expected a JSON array of OpenHands events, found %s", jsondoc.TokenKind(tok)),
		Hint: "pass an exported trajectory (JSON array) or an evaluation output.jsonl"}
}

func pick(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// instance reads the top-level object of an output.jsonl line. The same
// opening brace also starts the V1 files and single V0 event files, which
// are told apart by their keys.
func (d *decoder) instance() error {
	line := d.LineAt(d.Offset() - 1) // the opening brace's
	var history, kind, baseState bool
	for d.More() {
		k, err := d.Key("top-level object")
		if err != nil {
			return err
		}
		switch k {
		case "history":
			if history {
				return trajectory.Errorf(line, "the instance has two \"history\" keys")
			}
			history = true
			if err := d.Delim('[', "history"); err != nil {
				return err
			}
			if err := d.events("history"); err != nil {
				return err
			}
			continue
		case "instance_id":
			raw, _, err := d.Raw("instance_id")
			if err != nil {
				return err
			}
			d.t.SessionID = strings.Clone(gjson.ParseBytes(raw).String())
			continue
		case "kind":
			kind = true
		case "execution_status":
			baseState = true
		case "action", "observation":
			if !history {
				return &trajectory.Error{Kind: trajectory.Unsupported, Line: line,
					Msg:  "this is a single OpenHands event, not a trajectory",
					Hint: "export the whole conversation as a trajectory (a JSON array of events)"}
			}
		}
		if err := d.Skip(k); err != nil {
			return err
		}
	}
	if err := d.Delim('}', "top-level object"); err != nil {
		return err
	}
	if !history {
		if kind || baseState {
			return &trajectory.Error{Kind: trajectory.Unsupported, Line: line, Msg: v1Msg, Hint: v1Hint}
		}
		return &trajectory.Error{Kind: trajectory.Malformed, Line: line,
			Msg:  "a JSON object without \"history\": not an OpenHands trajectory",
			Hint: "pass an exported trajectory (JSON array) or an evaluation output.jsonl"}
	}
	d.t.Format = pick(d.legacy, FormatLegacyEvalOutput, FormatEvalOutput)
	if d.More() {
		next := d.Offset()
		tok, err := d.Token("after the instance")
		if err != nil {
			return err
		}
		if tok != json.Delim('{') {
			return trajectory.Errorf(d.LineAt(next), "unexpected %s after the instance", jsondoc.TokenKind(tok))
		}
		return &trajectory.Error{Kind: trajectory.Unsupported, Line: d.LineAt(next),
			Msg:  MultiInstanceMsg + "; pvisor replays one instance at a time",
			Hint: "choose one with --instance ID ('pvisor inspect FILE' lists them)"}
	}
	return d.End("the instance")
}

// events reads array elements up to and including the closing bracket.
func (d *decoder) events(what string) error {
	for d.More() {
		raw, line, err := d.Raw(what)
		if err != nil {
			return err
		}
		if err := d.event(raw, line); err != nil {
			return err
		}
		d.nEvents++
		d.t.Lines = d.nEvents
	}
	if d.nEvents == 0 {
		return trajectory.Errorf(d.LineAt(d.Offset()), "%s has no events", what)
	}
	return d.Delim(']', what)
}

// ev is the part of one event the model needs. Its strings point into a
// copy of the whole event; whatever is kept goes through strings.Clone so the
// event itself can be collected.
type ev struct {
	idx               int
	line              int
	id, cause         int64
	hasID, hasCause   bool
	source, act, obs  string
	hasAction, hasObs bool
	kind              string
	args, extras, tcm gjson.Result
	content, message  gjson.Result
	success, exitCode gjson.Result
	flat              bool
	raw               []byte
	idIsString        bool
}

func (d *decoder) parse(raw []byte, line int) (*ev, error) {
	e := &ev{idx: d.nEvents, line: line, raw: raw}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, trajectory.Errorf(line, "event %d is %s, not an object", e.idx, jsondoc.Kind(gjson.ParseBytes(raw)))
	}
	var bad error
	gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			switch {
			case v.Type == gjson.String:
				e.idIsString = true
			case v.Type != gjson.Number || v.Num != float64(int64(v.Num)):
				bad = trajectory.Errorf(line, "event %d: id %s is not an integer", e.idx, v.Raw)
			default:
				e.id, e.hasID = int64(v.Num), true
			}
		case "cause":
			switch {
			case v.Type == gjson.Null:
			case v.Type != gjson.Number || v.Num != float64(int64(v.Num)):
				bad = trajectory.Errorf(line, "event %d: cause %s is not an event id", e.idx, v.Raw)
			default:
				e.cause, e.hasCause = int64(v.Num), true
			}
		case "source":
			e.source = v.Str
		case "action":
			if v.Type != gjson.String {
				bad = trajectory.Errorf(line, "event %d: \"action\" is %s, not a string", e.idx, jsondoc.Kind(v))
			}
			e.act, e.hasAction = v.Str, true
		case "observation":
			if v.Type != gjson.String {
				bad = trajectory.Errorf(line, "event %d: \"observation\" is %s, not a string", e.idx, jsondoc.Kind(v))
			}
			e.obs, e.hasObs = v.Str, true
		case "kind":
			e.kind = v.Str
		case "args":
			if !v.IsObject() {
				bad = trajectory.Errorf(line, "event %d: \"args\" is %s, not an object", e.idx, jsondoc.Kind(v))
			}
			e.args = v
		case "extras":
			e.extras = v
		case "tool_call_metadata":
			e.tcm = v
		case "content":
			e.content = v
		case "message":
			e.message = v
		case "success":
			e.success = v
		case "exit_code":
			e.exitCode = v
		}
		return bad == nil
	})
	if bad != nil {
		return nil, bad
	}
	switch {
	case e.kind != "" && !e.hasAction && !e.hasObs:
		return nil, &trajectory.Error{Kind: trajectory.Unsupported, Line: line, Msg: v1Msg, Hint: v1Hint}
	case e.hasAction && e.hasObs:
		return nil, trajectory.Errorf(line, "event %d has both \"action\" and \"observation\"", e.idx)
	case !e.hasAction && !e.hasObs:
		return nil, trajectory.Errorf(line, "event %d has neither \"action\" nor \"observation\"", e.idx)
	case e.idIsString:
		return nil, trajectory.Errorf(line, "event %d: id is a string; V0 event ids are integers", e.idx)
	}
	// 2024 serialisation: the fields sit next to "action"/"observation"
	// with no args/extras envelope, no id and no cause.
	e.flat = !e.hasID && !e.args.Exists() && !e.extras.Exists()
	return e, nil
}

func (d *decoder) event(raw []byte, line int) error {
	e, err := d.parse(raw, line)
	if err != nil {
		return err
	}
	if e.flat {
		d.legacy = true
	}
	if e.hasID {
		if d.ids[e.id] {
			return trajectory.Errorf(line, "event %d: duplicate id %d", e.idx, e.id)
		}
		d.ids[e.id] = true
	}
	prev := d.last
	d.last = callRef{action: -1}
	if e.hasObs {
		return d.observation(e, prev)
	}
	source := e.source
	if source == "" {
		// Flat events carry no source: the first message is the task.
		source = "agent"
		if e.act == "message" && !d.sawMsg {
			source = "user"
		}
	}
	if e.act == "message" {
		d.sawMsg = true
	}
	if e.act == "system" && d.t.Version == "" {
		d.t.Version = strings.Clone(e.args.Get("openhands_version").String())
	}
	if source != "agent" {
		if e.act == "message" {
			d.open = -1 // a user turn ends any parallel batch
		}
		return nil
	}
	switch e.act {
	case "system", "recall", "change_agent_state", "condensation", "condensation_request", "null":
		// Bookkeeping the controller emits on its own, not model output.
		return nil
	case "message":
		d.t.Actions = append(d.t.Actions, trajectory.Action{
			Text:    strings.Clone(d.argsOf(e).Get("content").String()),
			Locator: loc(e.idx),
		})
		d.open = -1
		return nil
	}
	return d.call(e)
}

func loc(i int) trajectory.Locator { return trajectory.Locator{Unit: "event", First: i, Last: i} }

// argsOf returns the action's arguments; flat events hold them inline.
func (d *decoder) argsOf(e *ev) gjson.Result {
	if e.flat {
		return gjson.ParseBytes(e.raw)
	}
	return e.args
}

func (d *decoder) call(e *ev) error {
	args := d.argsOf(e)
	callID := strings.Clone(e.tcm.Get("tool_call_id").String())
	if callID == "" {
		if e.hasID {
			callID = strconv.FormatInt(e.id, 10)
		} else {
			callID = "event-" + strconv.Itoa(e.idx)
		}
	}
	// For every action but think, args.thought is the response's visible
	// text (OpenHands copies the message content there), not an argument;
	// think's thought is its argument (with the content prepended).
	drop := []string{"thought"}
	if e.act == "think" {
		drop = nil
	}
	if e.flat {
		drop = append(drop, "action")
	}
	c := trajectory.ToolCall{
		ID:        callID,
		Name:      strings.Clone(e.act),
		Arguments: without(args, drop...),
		Locator:   loc(e.idx),
	}
	if (e.act == ActionEdit || e.act == ActionRead) && !args.Get("command").Exists() {
		c.Arguments = withEditorArgs(c.Arguments, e.tcm, callID)
	}
	resp := strings.Clone(e.tcm.Get("model_response.id").String())
	if resp != "" && d.open >= 0 && d.open == len(d.t.Actions)-1 && d.resp == resp {
		a := &d.t.Actions[d.open]
		a.Calls = append(a.Calls, c)
		a.Locator = a.Locator.Extend(c.Locator)
	} else {
		text := e.tcm.Get("model_response.choices.0.message.content")
		if text.Type != gjson.String {
			text = args.Get("thought")
		}
		d.t.Actions = append(d.t.Actions, trajectory.Action{Text: strings.Clone(text.String()), Locator: c.Locator, Calls: []trajectory.ToolCall{c}})
		d.open, d.resp = len(d.t.Actions)-1, resp
	}
	ref := callRef{action: d.open, call: len(d.t.Actions[d.open].Calls) - 1}
	if e.hasID {
		d.pending[e.id] = ref
	}
	if e.flat {
		d.last = ref
	}
	return nil
}

func (d *decoder) observation(e *ev, prev callRef) error {
	ref, ok := callRef{}, false
	switch {
	case e.hasCause:
		ref, ok = d.pending[e.cause]
		delete(d.pending, e.cause)
	case e.flat && prev.action >= 0:
		ref, ok = prev, true
	}
	if !ok {
		// Observations of user messages (null), state changes, recalls, and
		// errors about a response that produced no valid action.
		return nil
	}
	a := &d.t.Actions[ref.action]
	c := &a.Calls[ref.call]
	o := &trajectory.Observation{IsError: isError(e), Locator: loc(e.idx)}
	if !d.opts.SkipObservationContent {
		if e.content.Type == gjson.String {
			o.Content = strings.Clone(e.content.String())
		} else {
			o.Content = strings.Clone(e.message.String())
		}
	}
	c.Observation = o
	a.Locator = a.Locator.Extend(o.Locator)
	if d.t.Cwd == "" && e.obs == "run" {
		d.t.Cwd = startDir(c, e.extras.Get("metadata.working_dir").Str)
	}
	return nil
}

// isError: error and rejection observations, and commands that exited
// non-zero (-1 is OpenHands' "still running / timed out").
func isError(e *ev) bool {
	switch e.obs {
	case "error", "user_rejected":
		return true
	}
	if code := e.extras.Get("metadata.exit_code"); code.Type == gjson.Number {
		return code.Int() != 0
	}
	if e.success.Type == gjson.False {
		return true
	}
	if e.exitCode.Type == gjson.Number {
		return e.exitCode.Int() != 0
	}
	return false
}

// editorFields are str_replace_editor's arguments.
var editorFields = []string{"command", "file_text", "old_str", "new_str", "insert_line", "view_range"}

// withEditorArgs completes the args of an early-2025 edit/read action,
// which kept the editor call only as Python source (translated_ipython_code),
// with the str_replace_editor arguments of the tool call the model made
// (in tool_call_metadata.model_response), so the replay knows the command.
func withEditorArgs(args json.RawMessage, tcm gjson.Result, callID string) json.RawMessage {
	var fn gjson.Result
	tcm.Get("model_response.choices.0.message.tool_calls").ForEach(func(_, tc gjson.Result) bool {
		if tc.Get("id").Str == callID && tc.Get("function.name").Str == "str_replace_editor" {
			fn = gjson.Parse(tc.Get("function.arguments").Str)
			return false
		}
		return true
	})
	if !fn.IsObject() || !gjson.ValidBytes(args) {
		return args
	}
	have := gjson.ParseBytes(args)
	out := bytes.TrimSuffix(bytes.TrimSpace(bytes.Clone(args)), []byte("}"))
	for _, k := range editorFields {
		if v := fn.Get(k); v.Exists() && !have.Get(k).Exists() {
			if len(bytes.TrimSpace(out)) > 1 {
				out = append(out, ',')
			}
			kb, _ := json.Marshal(k)
			out = append(append(append(out, kb...), ':'), v.Raw...)
		}
	}
	return append(out, '}')
}

// without copies obj minus the named top-level keys, keeping the other
// members' bytes and order as they were.
func without(obj gjson.Result, keys ...string) json.RawMessage {
	if !obj.IsObject() {
		return json.RawMessage("{}")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	obj.ForEach(func(k, v gjson.Result) bool {
		for _, drop := range keys {
			if k.Str == drop {
				return true
			}
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(k.Raw)
		b.WriteByte(':')
		b.WriteString(v.Raw)
		return true
	})
	b.WriteByte('}')
	return b.Bytes()
}
