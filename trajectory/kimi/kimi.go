// Package kimi reads sessions of Kimi Code (@moonshot-ai/kimi-code), the
// CLI `kimi`. A session is the directory
// $KIMI_CODE_HOME/sessions/wd_<slug(basename(cwd))>_<sha256(cwd)[:12]>/session_<uuid>/;
// what the model saw is its main agent's wire log, agents/main/wire.jsonl,
// and that file is what a user points pvisor at (inspect, --prepare-only).
// The directory's other files (state.json, file-history/, notify/, logs/)
// hold nothing the model saw.
//
// The wire log is an append-only record stream: metadata (the protocol
// version) first, then runtime.set_binding (the workspace id),
// profile.bind (the system prompt, which states the cwd), turn.prompt,
// context.append_message (the user prompt and the <system-reminder>s) and
// context.append_loop_event, whose events step.begin, content.part (text
// or think), tool.call, tool.result and step.end make up the model's
// responses. One Action is one step (one model response): its content
// parts are the text and reasoning, its tool.call events the batch, each
// paired with the tool.result of the same toolCallId.
package kimi

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// SubFormatWire is the Trajectory.Format of a wire log, followed by its
// protocol version ("wire-jsonl-1.5").
const SubFormatWire = "wire-jsonl"

// knownProtocol is the wire protocol version the decoder was written
// against (Kimi Code 2.1.0); the major must match.
const knownProtocol = "1"

type format struct{}

// New returns the Kimi Code format.
func New() trajectory.Format { return format{} }

func (format) Agent() string     { return AgentName }
func (format) PrefixExt() string { return "jsonl" }

// Detect claims a file whose first line is the wire log's metadata record:
// {"type":"metadata","protocol_version":…}. No other agent's file starts
// with a record of that type.
func (format) Detect(head []byte) bool {
	line := firstLine(head)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	return gjson.GetBytes(line, "type").Str == "metadata" &&
		gjson.GetBytes(line, "protocol_version").Type == gjson.String
}

func firstLine(head []byte) []byte {
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		var line []byte
		if i < 0 {
			line, head = head, nil
		} else {
			line, head = head[:i], head[i+1:]
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line
		}
	}
	return nil
}

// cwdRe finds the working directory in the system prompt Kimi binds.
var cwdRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("The current working directory is `([^`\n]+)`") })

// wallTimeRe is the wall-time header renderResult writes.
var wallTimeRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^Wall time: [0-9]+\.[0-9]{3} seconds`) })

// maxCalls bounds the tool calls one decode keeps track of, so a hostile
// file cannot grow the index without bound beyond what it holds anyway.
const maxCalls = 1 << 20

// decoder is the state of one decode.
type decoder struct {
	opts  trajectory.Options
	t     *trajectory.Trajectory
	steps map[string]int // stepUuid → index into t.Actions
	calls map[string]callRef
}

type callRef struct{ action, call int }

// Decode streams the wire log.
func (format) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	jr := jsonl.NewReader(r)
	d := &decoder{opts: opts, t: &trajectory.Trajectory{Agent: AgentName, Format: SubFormatWire},
		steps: map[string]int{}, calls: map[string]callRef{}}
	first := true
	for jr.Next() {
		ln := jr.Line()
		rec := gjson.ParseBytes(ln.Data)
		if first {
			first = false
			if rec.Get("type").Str != "metadata" || rec.Get("protocol_version").Type != gjson.String {
				return nil, &trajectory.Error{Kind: trajectory.Malformed, Line: ln.N,
					Msg:  "not a Kimi Code wire log: the first record is not {\"type\":\"metadata\",\"protocol_version\":…}",
					Hint: "point pvisor at the session's agents/main/wire.jsonl"}
			}
			v := rec.Get("protocol_version").Str
			if major, _, _ := cutDot(v); major != knownProtocol {
				return nil, &trajectory.Error{Kind: trajectory.Unsupported, Line: ln.N,
					Msg: fmt.Sprintf("Kimi Code wire protocol %s: this pvisor reads protocol %s.x", v, knownProtocol)}
			}
			// The protocol is the wire log's version; the CLI's own is in no record.
			d.t.Format = SubFormatWire + "-" + v
			continue
		}
		if err := d.record(ln, rec); err != nil {
			return nil, err
		}
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	if first {
		return nil, &trajectory.Error{Kind: trajectory.Malformed, Msg: "empty file",
			Hint: "expected a Kimi Code session's agents/main/wire.jsonl"}
	}
	d.t.TornTail = jr.Torn()
	d.t.Lines = jr.Lines()
	d.t.NumberSteps()
	return d.t, nil
}

func cutDot(v string) (string, string, bool) {
	if i := bytes.IndexByte([]byte(v), '.'); i >= 0 {
		return v[:i], v[i+1:], true
	}
	return v, "", false
}

func loc(ln jsonl.Line) trajectory.Locator {
	return trajectory.Locator{Unit: "line", First: ln.N, Last: ln.N, StartByte: ln.Offset, EndByte: ln.End}
}

func malformed(ln jsonl.Line, format string, args ...any) error {
	return &trajectory.Error{Kind: trajectory.Malformed, Line: ln.N, Msg: fmt.Sprintf(format, args...)}
}

// record handles one record after the metadata line.
func (d *decoder) record(ln jsonl.Line, rec gjson.Result) error {
	switch rec.Get("type").Str {
	case "profile.bind":
		if agent := rec.Get("agentId").Str; agent != "" && agent != "main" {
			return nil
		}
		if m := cwdRe().FindStringSubmatch(rec.Get("systemPrompt").Str); m != nil && d.t.Cwd == "" {
			d.t.Cwd = m[1]
		}
	case "context.append_loop_event":
		if agent := rec.Get("agentId").Str; agent != "" && agent != "main" {
			return nil // a subagent's loop is not the main conversation
		}
		return d.loopEvent(ln, rec.Get("event"))
	}
	return nil
}

// action returns the Action of the step an event belongs to, creating it
// at the step's first event.
func (d *decoder) action(ln jsonl.Line, key string) int {
	if i, ok := d.steps[key]; ok {
		d.t.Actions[i].Locator = d.t.Actions[i].Locator.Extend(loc(ln))
		return i
	}
	d.t.Actions = append(d.t.Actions, trajectory.Action{Locator: loc(ln)})
	d.steps[key] = len(d.t.Actions) - 1
	return len(d.t.Actions) - 1
}

func (d *decoder) loopEvent(ln jsonl.Line, ev gjson.Result) error {
	if !ev.IsObject() {
		return malformed(ln, "context.append_loop_event has no event object")
	}
	switch typ := ev.Get("type").Str; typ {
	case "step.begin":
		key := ev.Get("uuid").Str
		if key == "" {
			return malformed(ln, "step.begin has no uuid")
		}
		if _, dup := d.steps[key]; dup {
			return malformed(ln, "step %s begins twice", key)
		}
		d.action(ln, key)
	case "content.part":
		i, err := d.stepOf(ln, ev)
		if err != nil {
			return err
		}
		a := &d.t.Actions[i]
		switch p := ev.Get("part"); p.Get("type").Str {
		case "text":
			a.Text += p.Get("text").Str
		case "think":
			a.Reasoning += p.Get("think").Str
		}
	case "tool.call":
		i, err := d.stepOf(ln, ev)
		if err != nil {
			return err
		}
		id, name := ev.Get("toolCallId").Str, ev.Get("name").Str
		if id == "" || name == "" {
			return malformed(ln, "tool.call without toolCallId or name")
		}
		if _, dup := d.calls[id]; dup {
			return malformed(ln, "tool call %s appears twice", id)
		}
		if len(d.calls) >= maxCalls {
			return malformed(ln, "more than %d tool calls", maxCalls)
		}
		args := ev.Get("args")
		raw := []byte(args.Raw)
		if !args.IsObject() {
			return malformed(ln, "tool call %s: args is not an object", id)
		}
		a := &d.t.Actions[i]
		a.Calls = append(a.Calls, trajectory.ToolCall{ID: id, Name: name,
			Arguments: bytes.Clone(raw), Locator: loc(ln), Cwd: ev.Get("display.cwd").Str})
		d.calls[id] = callRef{i, len(a.Calls) - 1}
	case "tool.result":
		id := ev.Get("toolCallId").Str
		ref, ok := d.calls[id]
		if !ok {
			return malformed(ln, "tool.result for unknown tool call %q", id)
		}
		c := &d.t.Actions[ref.action].Calls[ref.call]
		if c.Observation != nil {
			return malformed(ln, "tool call %s has two results", id)
		}
		res := ev.Get("result")
		o := &trajectory.Observation{IsError: res.Get("isError").Bool(), Locator: loc(ln)}
		if !d.opts.SkipObservationContent {
			o.Content = renderResult(c.Name, res)
		}
		c.Observation = o
		d.t.Actions[ref.action].Locator = d.t.Actions[ref.action].Locator.Extend(loc(ln))
	case "step.end":
		if _, err := d.stepOf(ln, ev); err != nil {
			return err
		}
	}
	return nil
}

// stepOf is the Action of the step an event names by stepUuid (step.end by
// uuid).
func (d *decoder) stepOf(ln jsonl.Line, ev gjson.Result) (int, error) {
	key := ev.Get("stepUuid").Str
	if ev.Get("type").Str == "step.end" {
		key = ev.Get("uuid").Str
	}
	i, ok := d.steps[key]
	if !ok {
		return 0, malformed(ln, "%s of step %q, which never began", ev.Get("type").Str, key)
	}
	d.t.Actions[i].Locator = d.t.Actions[i].Locator.Extend(loc(ln))
	return i, nil
}
