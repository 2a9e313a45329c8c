package copilot

import (
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// maxCalls bounds the tool requests of one file: every pending call is
// indexed by id, so an untrusted file could otherwise grow that index
// without limit.
const maxCalls = 1 << 20

// decoder is the state of one Decode.
type decoder struct {
	opts    trajectory.Options
	t       *trajectory.Trajectory
	pending map[string][2]int // toolCallId → (action, call) of calls without a result
	seen    map[string]bool   // every toolCallId so far: ids are unique in a session
	started bool
	// cut drops the actions after a DecodePrefix's boundary: Copilot asks
	// the model again only once every result of a response is in, so a
	// response is final when the next one begins.
	cut trajectory.Cutter
}

// Decode streams events.jsonl; memory is the kept text and observations
// plus an index of the call ids.
func (format) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	return decode(r, opts, 0)
}

// DecodePrefix is Decode keeping only the actions up to step afterStep
// (every later line is still read and checked).
func (format) DecodePrefix(r io.Reader, _ io.ReaderAt, opts trajectory.Options, afterStep int) (*trajectory.Trajectory, error) {
	return decode(r, opts, afterStep)
}

// dropped marks the pending calls of a response the cut left out.
var dropped = [2]int{-1, -1}

func decode(r io.Reader, opts trajectory.Options, limit int) (*trajectory.Trajectory, error) {
	d := &decoder{opts: opts, t: &trajectory.Trajectory{Agent: AgentName, Format: SubFormat},
		pending: map[string][2]int{}, seen: map[string]bool{}, cut: trajectory.Cutter{Limit: limit}}
	jr := jsonl.NewReader(r)
	for jr.Next() {
		if err := d.line(jr.Line()); err != nil {
			return nil, err
		}
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	if !d.started {
		return nil, &trajectory.Error{Kind: trajectory.Malformed, Msg: "no events: the file is empty",
			Hint: "pass the events.jsonl of a directory under ~/.copilot/session-state"}
	}
	d.cut.Settle(d.t, nil)
	d.t.TornTail = jr.Torn()
	d.t.Lines = jr.Lines()
	d.t.NumberSteps()
	return d.t, nil
}

func locate(l jsonl.Line) trajectory.Locator {
	return trajectory.Locator{Unit: "line", First: l.N, Last: l.N, StartByte: l.Offset, EndByte: l.End}
}

func (d *decoder) line(l jsonl.Line) error {
	v := gjson.ParseBytes(l.Data)
	typ := v.Get("type")
	if typ.Type != gjson.String {
		return trajectory.Errorf(l.N, `the event has no "type" string`)
	}
	data := v.Get("data")
	if !data.IsObject() {
		return trajectory.Errorf(l.N, "%s event: data is not an object", typ.Str)
	}
	if !d.started {
		if typ.Str != "session.start" {
			return trajectory.Errorf(l.N, "the first event is %q, not session.start; a Copilot events.jsonl starts with session.start", typ.Str)
		}
		d.started = true
		return d.sessionStart(l.N, data)
	}
	switch typ.Str {
	case "session.start":
		return trajectory.Errorf(l.N, "a second session.start: the file joins two sessions")
	case "assistant.message":
		return d.message(l, data)
	case "tool.execution_complete":
		return d.result(l, data)
	case "assistant.turn_end":
		// Closes the turn of the last response: a prefix that stops at a
		// step ends with it, as a turn Copilot finished itself would.
		if n := len(d.t.Actions); n > 0 && !d.cut.Done() && d.t.Actions[n-1].Complete() {
			d.t.Actions[n-1].Locator = d.t.Actions[n-1].Locator.Extend(locate(l))
		}
	case "session.compaction_complete", "session.truncation":
		return trajectory.Unsupportedf(l.N, "%s: Copilot replaced the earlier history here, which a replay cannot rebuild", typ.Str)
	}
	return nil
}

func (d *decoder) sessionStart(n int, data gjson.Result) error {
	if v := data.Get("version"); v.Exists() && v.Raw != "1" {
		return trajectory.Unsupportedf(n, "session.start version %s: pvisor reads version 1", v.Raw)
	}
	id := data.Get("sessionId")
	if id.Type != gjson.String || id.Str == "" {
		return trajectory.Errorf(n, `session.start has no "sessionId" string`)
	}
	d.t.SessionID = strings.Clone(id.Str)
	d.t.Version = strings.Clone(data.Get("copilotVersion").Str)
	d.t.Cwd = strings.Clone(data.Get("context.cwd").Str)
	return nil
}

func (d *decoder) message(l jsonl.Line, data gjson.Result) error {
	reqs := data.Get("toolRequests")
	if reqs.Exists() && !reqs.IsArray() {
		return trajectory.Errorf(l.N, "assistant.message: toolRequests is not an array")
	}
	content := data.Get("content")
	if content.Exists() && content.Type != gjson.String {
		return trajectory.Errorf(l.N, "assistant.message: content is not a string")
	}
	d.cut.Settle(d.t, nil)
	keep := !d.cut.Done()
	a := trajectory.Action{Locator: locate(l)}
	if keep {
		a.Text, a.Reasoning = strings.Clone(content.Str), strings.Clone(data.Get("reasoningText").Str)
	}
	ai := len(d.t.Actions)
	var err error
	reqs.ForEach(func(_, q gjson.Result) bool {
		id, name := q.Get("toolCallId"), q.Get("name")
		switch {
		case id.Type != gjson.String || id.Str == "":
			err = trajectory.Errorf(l.N, "assistant.message: tool request %d has no toolCallId", len(a.Calls))
		case name.Type != gjson.String || name.Str == "":
			err = trajectory.Errorf(l.N, "assistant.message: tool request %q has no name", id.Str)
		case d.seen[id.Str]:
			err = trajectory.Errorf(l.N, "assistant.message: tool call id %q is used twice", id.Str)
		case len(d.seen) >= maxCalls:
			err = trajectory.Errorf(l.N, "more than %d tool calls", maxCalls)
		}
		if err != nil {
			return false
		}
		args := q.Get("arguments")
		raw := []byte("{}")
		if args.Exists() {
			raw = []byte(args.Raw)
		}
		cid := strings.Clone(id.Str)
		d.seen[cid] = true
		if !keep {
			d.pending[cid] = dropped
			return true
		}
		d.pending[cid] = [2]int{ai, len(a.Calls)}
		a.Calls = append(a.Calls, trajectory.ToolCall{ID: cid, Name: strings.Clone(name.Str), Arguments: raw, Locator: locate(l)})
		return true
	})
	if err != nil {
		return err
	}
	if keep {
		d.t.Actions = append(d.t.Actions, a)
	} else {
		d.t.Cut = d.cut.Limit // an action past the boundary was left out
	}
	return nil
}

func (d *decoder) result(l jsonl.Line, data gjson.Result) error {
	id := data.Get("toolCallId")
	if id.Type != gjson.String {
		return trajectory.Errorf(l.N, "tool.execution_complete has no toolCallId")
	}
	at, ok := d.pending[id.Str]
	if !ok {
		if d.seen[id.Str] {
			return trajectory.Errorf(l.N, "tool.execution_complete: call %q has a result already", id.Str)
		}
		return trajectory.Errorf(l.N, "tool.execution_complete: call %q answers no tool request", id.Str)
	}
	delete(d.pending, id.Str)
	switch {
	case at == dropped:
		return nil
	case d.cut.Limit > 0 && at[0] != len(d.t.Actions)-1:
		// A result after a later response began: which responses are
		// complete, and so where the boundary is, needs the whole file.
		return trajectory.ErrNeedFull
	}
	o := &trajectory.Observation{IsError: !data.Get("success").Bool(), Locator: locate(l)}
	if !d.opts.SkipObservationContent {
		o.Content = strings.Clone(ResultText(data))
	}
	a := &d.t.Actions[at[0]]
	a.Calls[at[1]].Observation = o
	a.Locator = a.Locator.Extend(o.Locator)
	return nil
}

// ResultText is what the model saw of a tool.execution_complete: the
// result's content, or for a failed call the error's message.
func ResultText(data gjson.Result) string {
	if c := data.Get("result.content"); c.Exists() {
		if c.Type == gjson.String {
			return c.Str
		}
		return c.Raw
	}
	if m := data.Get("error.message"); m.Exists() {
		return m.Str
	}
	return ""
}
