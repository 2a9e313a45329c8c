package sweagent

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// entry is the part of one trajectory entry the model needs.
type entry struct {
	action, observation, text string
	loc                       trajectory.Locator
}

// reply is the part of one (non-demo) assistant history message kept.
type reply struct {
	id, name, text string
	loc            trajectory.Locator
}

type decoder struct {
	*jsondoc.Doc
	opts     trajectory.Options
	t        *trajectory.Trajectory
	entries  []entry
	replies  []reply
	seenT    bool
	seenH    bool
	nHistory int
}

// Decode reads the object in one pass, keeping a lean copy of each entry
// and assistant message, and pairs them at the end: the two lists are
// separate members of the object.
func (format) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	d := &decoder{Doc: jsondoc.New(r), opts: opts, t: &trajectory.Trajectory{Agent: AgentName, Format: Format}}
	tok, err := d.Open()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, &trajectory.Error{Kind: trajectory.Malformed, Line: 1,
			Msg:  fmt.Sprintf("expected a SWE-agent trajectory (a JSON object), found %s", jsondoc.TokenKind(tok)),
			Hint: "pass the .traj file SWE-agent wrote"}
	}
	if err := d.object(); err != nil {
		return nil, err
	}
	if err := d.End("the trajectory"); err != nil {
		return nil, err
	}
	if err := d.build(); err != nil {
		return nil, err
	}
	d.t.Lines = len(d.entries)
	d.t.NumberSteps()
	return d.t, nil
}

func (d *decoder) object() error {
	line := d.LineAt(d.Offset() - 1) // the opening brace's
	for d.More() {
		k, err := d.Key("trajectory")
		if err != nil {
			return err
		}
		switch k {
		case "trajectory", "history":
			seen := &d.seenT
			if k == "history" {
				seen = &d.seenH
			}
			if *seen {
				return trajectory.Errorf(line, "the file has two %q keys", k)
			}
			*seen = true
			if err := d.list(k); err != nil {
				return err
			}
			continue
		case "info":
			raw, vline, err := d.Raw(k)
			if err != nil {
				return err
			}
			if err := d.info(gjson.ParseBytes(raw), vline); err != nil {
				return err
			}
			continue
		}
		if err := d.Skip(k); err != nil {
			return err
		}
	}
	if err := d.Delim('}', "trajectory"); err != nil {
		return err
	}
	if !d.seenT {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: line,
			Msg:  "the file has no \"trajectory\"",
			Hint: "pass the .traj file SWE-agent wrote for a run (a demonstration file holds only history)"}
	}
	return nil
}

// info takes the version SWE-agent ≥ 1.0 records. Only 0.x and 1.x wrote
// the layout read here.
func (d *decoder) info(v gjson.Result, line int) error {
	if !v.IsObject() {
		if v.Type == gjson.Null {
			return nil
		}
		return trajectory.Errorf(line, "info is %s, not an object", jsondoc.Kind(v))
	}
	ver := v.Get("swe_agent_version")
	if !ver.Exists() {
		return nil
	}
	if ver.Type != gjson.String {
		return trajectory.Errorf(line, "info.swe_agent_version is %s, not a string", jsondoc.Kind(ver))
	}
	if !strings.HasPrefix(ver.Str, "0.") && !strings.HasPrefix(ver.Str, "1.") {
		return &trajectory.Error{Kind: trajectory.Unsupported, Line: line,
			Msg:  fmt.Sprintf("SWE-agent %s is not supported", ver.Str),
			Hint: "pvisor reads the .traj layout of SWE-agent 0.x and 1.x"}
	}
	d.t.Version = strings.Clone(ver.Str)
	return nil
}

// list reads the trajectory or history array.
func (d *decoder) list(k string) error {
	if err := d.Delim('[', k); err != nil {
		return err
	}
	for i := 0; d.More(); i++ {
		raw, line, err := d.Raw(k)
		if err != nil {
			return err
		}
		start, end := d.Span()
		v := gjson.ParseBytes(raw)
		if !v.IsObject() {
			what := "trajectory entry"
			if k == "history" {
				what = "history message"
			}
			return trajectory.Errorf(line, "%s %d is %s, not an object", what, i, jsondoc.Kind(v))
		}
		if k == "trajectory" {
			err = d.entry(v, i, line, start, end)
		} else {
			err = d.message(v, i, line, start, end)
		}
		if err != nil {
			return err
		}
	}
	return d.Delim(']', k)
}

func (d *decoder) entry(v gjson.Result, i, line int, start, end int64) error {
	a, o := v.Get("action"), v.Get("observation")
	if !a.Exists() {
		return trajectory.Errorf(line, "trajectory entry %d has no \"action\"", i)
	}
	if a.Type != gjson.String {
		return trajectory.Errorf(line, "trajectory entry %d: \"action\" is %s, not a string", i, jsondoc.Kind(a))
	}
	if o.Type != gjson.String && o.Type != gjson.Null {
		return trajectory.Errorf(line, "trajectory entry %d: \"observation\" is %s, not a string", i, jsondoc.Kind(o))
	}
	e := entry{
		action: strings.Clone(a.Str),
		text:   strings.Clone(text(v)),
		loc:    trajectory.Locator{Unit: "entry", First: i, Last: i, StartByte: start, EndByte: end},
	}
	if !d.opts.SkipObservationContent {
		e.observation = strings.Clone(o.Str)
	}
	d.entries = append(d.entries, e)
	return nil
}

// text is an entry's or message's visible model text: the thought SWE-agent
// parsed out, else the whole response (content for a history message).
func text(v gjson.Result) string {
	if t := v.Get("thought"); t.Type == gjson.String {
		return t.Str
	}
	if r := v.Get("response"); r.Type == gjson.String {
		return r.Str
	}
	return v.Get("content").String()
}

func (d *decoder) message(v gjson.Result, i, line int, start, end int64) error {
	d.nHistory++
	role := v.Get("role")
	if role.Type != gjson.String {
		return trajectory.Errorf(line, "history message %d has no \"role\" string", i)
	}
	if role.Str != "assistant" || v.Get("is_demo").Bool() {
		return nil
	}
	r := reply{
		text: strings.Clone(text(v)),
		loc:  trajectory.Locator{Unit: "message", First: i, Last: i, StartByte: start, EndByte: end},
	}
	switch tc := v.Get("tool_calls"); {
	case tc.IsArray():
		if first := tc.Get("0"); first.Exists() {
			id := first.Get("id")
			if id.Type != gjson.String || id.Str == "" {
				return trajectory.Errorf(line, "history message %d: tool call 0 has no id", i)
			}
			r.id = strings.Clone(id.Str)
			r.name = strings.Clone(first.Get("function.name").String())
		}
	case tc.Exists() && tc.Type != gjson.Null:
		return trajectory.Errorf(line, "history message %d: tool_calls is %s, not an array", i, jsondoc.Kind(tc))
	}
	d.replies = append(d.replies, r)
	return nil
}

// build pairs the i-th entry with the i-th assistant message.
func (d *decoder) build() error {
	ids := map[string]int{}
	for i, e := range d.entries {
		c := trajectory.ToolCall{
			ID:        "step-" + strconv.Itoa(i+1),
			Name:      command(e.action),
			Arguments: actionArgs(e.action),
			Locator:   e.loc,
			Observation: &trajectory.Observation{
				Content: e.observation,
				Locator: e.loc,
			},
		}
		if i < len(d.replies) {
			r := d.replies[i]
			if r.id != "" {
				c.ID = r.id
			}
			if r.name != "" {
				c.Name = r.name
			}
		}
		if prev, dup := ids[c.ID]; dup {
			return trajectory.Errorf(0, "trajectory entries %d and %d have the same tool call id %q", prev, i, c.ID)
		}
		ids[c.ID] = i
		d.t.Actions = append(d.t.Actions, trajectory.Action{Text: e.text, Calls: []trajectory.ToolCall{c}, Locator: e.loc})
	}
	// Responses whose action never ran (a run killed mid-step).
	for i := len(d.entries); i < len(d.replies); i++ {
		r := d.replies[i]
		id := r.id
		if id == "" {
			id = "step-" + strconv.Itoa(i+1)
		}
		d.t.Actions = append(d.t.Actions, trajectory.Action{Text: r.text, Locator: r.loc,
			Calls: []trajectory.ToolCall{{ID: id, Name: r.name, Arguments: json.RawMessage("{}"), Locator: r.loc}}})
	}
	return nil
}

// actionArgs is {"action": action} with the string encoded as JSON.
func actionArgs(action string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"action": action})
	return b
}
