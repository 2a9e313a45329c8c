package codex

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/hashset"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// How model responses are delimited.
//
// A rollout has no response id: the items of one model response are simply
// the model-output response_items (reasoning, assistant message, *_call) the
// CLI wrote, one after another, while that response streamed. A new response
// begins at the first model-output item after anything the model did not
// produce in that response:
//
//   - a *_output item (the CLI only sends outputs back in the next request):
//     codemie 0.125 lines 41-50 are reasoning, an assistant "commentary"
//     message and three exec_command calls, token_count, then three outputs;
//     lines 51-53 are three write_stdin calls with no reasoning or text before
//     them, a separate tool-only response. Lines 276-283: apply_patch call,
//     output, then a second apply_patch call (280) = another response.
//   - a user/developer/system message, compaction, ghost snapshot or another
//     agent's message (model input);
//   - turn_context, which 0.40 writes before every model request (agentcmd
//     0.40 lines 160-165: turn_context, agent_reasoning, token_count,
//     reasoning, update_plan call, its output);
//   - the event_msg turn markers user_message, task_started, task_complete,
//     turn_aborted, token_count, context_compacted and error. They are needed:
//     codemie 0.128 lines 30-33 are assistant message, user_message event,
//     assistant message, with no response_item user message in between.
//     token_count is written after the response's items in 0.12x (0.125
//     line 47) and before them in 0.40 (line 162), never between two items
//     of one response, so it is safe either way.
//
// Everything else (agent_reasoning/agent_message/exec_command_end events,
// world_state, unknown kinds) is neutral. Server-side tools (web_search_call,
// image_generation_call) are part of the response that issued them: 0.125
// lines 195-203 are reasoning, web_search_call, reasoning, message and three
// calls, all one response. They have no output item and nothing to replay,
// so they are not ToolCalls.
//
// Several call items before their outputs are one response's parallel batch.

type callRef struct{ action, call int }

type decoder struct {
	opts    trajectory.Options
	t       *trajectory.Trajectory
	cur     int  // index of the open action, -1 before the first
	newResp bool // a delimiter came after the open action's last item
	calls   map[string]callRef
	records int
	// cut drops the actions after a DecodePrefix's boundary; the ids of
	// their calls stay in dropped, hashed, so a repeated id or a late
	// output is still noticed (and decided by a full decode).
	cut     trajectory.Cutter
	dropped hashset.Set
	seed    maphash.Seed
}

// Decode reads a rollout as a stream; only the model-visible text of the
// session (texts, reasoning summaries, arguments, outputs) is kept.
func (format) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	return decode(r, opts, 0)
}

// DecodePrefix is Decode keeping only the actions up to step afterStep:
// a response is final once the next one begins (a later output is an
// error), so the ones past the boundary are dropped as they end.
func (format) DecodePrefix(r io.Reader, _ io.ReaderAt, opts trajectory.Options, afterStep int) (*trajectory.Trajectory, error) {
	return decode(r, opts, afterStep)
}

func decode(r io.Reader, opts trajectory.Options, limit int) (*trajectory.Trajectory, error) {
	d := &decoder{
		opts:  opts,
		t:     &trajectory.Trajectory{Agent: AgentName, Format: SubFormat},
		cur:   -1,
		calls: map[string]callRef{},
		cut:   trajectory.Cutter{Limit: limit},
	}
	if limit > 0 {
		d.seed = maphash.MakeSeed()
	}
	jr := jsonl.NewReader(r)
	for jr.Next() {
		if err := d.line(jr.Line()); err != nil {
			return nil, err
		}
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	d.cut.Settle(d.t, d.drop)
	d.t.TornTail = jr.Torn()
	d.t.Lines = jr.Lines()
	if d.records == 0 {
		return nil, &trajectory.Error{Kind: trajectory.Malformed, Msg: "no records: the file is empty",
			Hint: "pass a rollout file from ~/.codex/sessions"}
	}
	d.t.NumberSteps()
	return d.t, nil
}

// view lets gjson read the line without copying it; every string kept past
// this line goes through keep.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// keep returns r's string value detached from the line buffer. gjson returns
// a fresh string only when it had to unescape; otherwise it aliases the input.
func keep(r gjson.Result) string {
	if r.Type == gjson.String && strings.IndexByte(r.Raw, '\\') >= 0 {
		return r.String()
	}
	return strings.Clone(r.String())
}

func (d *decoder) line(l jsonl.Line) error {
	s := view(l.Data)
	d.records++
	first := d.records == 1
	typ := gjson.Get(s, "type")
	if first {
		if err := checkFirst(l, s, typ); err != nil {
			return err
		}
	}
	if typ.Type != gjson.String {
		return trajectory.Errorf(l.N, "record has no string \"type\"; not a Codex rollout line")
	}
	p := rec(s)
	switch typ.Str {
	case "session_meta":
		if !gjson.Get(s, "payload").IsObject() {
			return trajectory.Errorf(l.N, "session_meta record has no \"payload\" object")
		}
		return d.sessionMeta(l, p, first)
	case "response_item":
		return d.item(l, p)
	case "event_msg":
		switch p.Get("payload.type").Str {
		case "user_message", "task_started", "task_complete", "turn_started", "turn_complete",
			"turn_aborted", "token_count", "context_compacted", "error":
			d.newResp = true
		}
	case "turn_context":
		d.newResp = true
		if d.t.Cwd == "" {
			// session_meta always has it in the corpus; turn_context too.
			if cwd := p.Get("payload.cwd"); cwd.Type == gjson.String {
				d.t.Cwd = keep(cwd)
			}
		}
	case "compacted", "inter_agent_communication":
		d.newResp = true
	default:
		// Unknown kinds from newer CLIs (world_state, …) are skipped, but
		// a Claude Code entry (no envelope, a uuid chain) means a Claude
		// session was appended to the rollout.
		if !gjson.Get(s, "payload").Exists() && (gjson.Get(s, "parentUuid").Exists() || gjson.Get(s, "uuid").Exists()) {
			return &trajectory.Error{Kind: trajectory.Malformed, Line: l.N,
				Msg:  fmt.Sprintf("a Claude Code entry (type %q), not a Codex rollout record: two sessions are concatenated", typ.Str),
				Hint: fmt.Sprintf("keep lines 1-%d (head -n %d) for the Codex rollout", l.N-1, l.N-1)}
		}
	}
	return nil
}

// rec is one record's line. Its fields are read with paths from the top of
// the line so that a large payload is scanned only up to the field wanted,
// never squashed whole first.
type rec string

// field parses payload.<key> after finding it with the raw scanner; for
// small values behind large ones.
func (r rec) field(key string) gjson.Result {
	raw, ok := payloadField(string(r), key)
	if !ok {
		return gjson.Result{}
	}
	return gjson.Parse(raw)
}

// Get reads a path from the top of the line, e.g. "payload.type".
func (r rec) Get(path string) gjson.Result { return gjson.Get(string(r), path) }

// checkFirst refuses files that are Codex output but not a rollout, and
// requires the session_meta line Codex needs to resume.
func checkFirst(l jsonl.Line, s string, typ gjson.Result) error {
	if execStreamType(l.Data) {
		e := trajectory.Unsupportedf(l.N, "this is a `codex exec --json` event stream, not a rollout; pass the rollout file from ~/.codex/sessions")
		if id := gjson.Get(s, "thread_id").Str; id != "" {
			e.Hint = "it is ~/.codex/sessions/YYYY/MM/DD/rollout-<timestamp>-" + id + ".jsonl"
		}
		return e
	}
	if gjson.Get(s, "session").IsObject() && gjson.Get(s, "items").IsArray() {
		return &trajectory.Error{Kind: trajectory.Unsupported, Line: l.N,
			Msg:  "this is a rollout-*.json of the legacy TypeScript Codex CLI, which is not supported",
			Hint: "record the session again with the Rust Codex CLI (0.40 or newer)"}
	}
	if !typ.Exists() && (gjson.Get(s, "record_type").Exists() || gjson.Get(s, "instructions").Exists() ||
		(gjson.Get(s, "id").Exists() && gjson.Get(s, "timestamp").Exists())) {
		return &trajectory.Error{Kind: trajectory.Unsupported, Line: l.N,
			Msg:  "rollout from Codex 0.2x or older (records without the {timestamp,type,payload} envelope) is not supported",
			Hint: "record the session again with Codex 0.40 or newer"}
	}
	if typ.Str != "session_meta" {
		what := "a record without a string \"type\""
		if typ.Type == gjson.String {
			what = strconv.Quote(typ.Str)
		}
		return &trajectory.Error{Kind: trajectory.Malformed, Line: l.N,
			Msg:  "the first record is " + what + ", not session_meta; a Codex rollout starts with its session_meta",
			Hint: "pass the whole rollout file from ~/.codex/sessions"}
	}
	return nil
}

func (d *decoder) sessionMeta(l jsonl.Line, p rec, first bool) error {
	// codex exec fork (0.17x) writes only the delta plus a pointer to the
	// parent's history; 0.14x sub-agent forks carry forked_from_id. Either
	// way this file alone is not the conversation the model saw.
	if hb := p.Get("payload.history_base"); hb.Exists() && hb.Type != gjson.Null {
		parent := hb.Get("thread_id").Str
		if parent == "" {
			parent = "unknown"
		}
		return &trajectory.Error{Kind: trajectory.Unsupported, Line: l.N,
			Msg:  "forked rollouts are not supported: session_meta.history_base points at parent thread " + parent + " and this file holds only the turns after the fork",
			Hint: "replay the parent rollout instead"}
	}
	if f := p.Get("payload.forked_from_id"); f.Type == gjson.String && f.Str != "" {
		return &trajectory.Error{Kind: trajectory.Unsupported, Line: l.N,
			Msg:  "forked rollouts are not supported: session_meta.forked_from_id is " + f.Str,
			Hint: "replay the parent rollout instead"}
	}
	if !first {
		d.newResp = true
		return nil
	}
	id := p.Get("payload.id")
	if id.Type != gjson.String || id.Str == "" {
		id = p.Get("payload.session_id")
	}
	d.t.SessionID = keep(id)
	d.t.Version = keep(p.Get("payload.cli_version"))
	if cwd := p.Get("payload.cwd"); cwd.Type == gjson.String {
		d.t.Cwd = keep(cwd)
	}
	return nil
}

// drop forgets the calls of an action past the boundary but their ids.
func (d *decoder) drop(a *trajectory.Action) {
	for i := range a.Calls {
		delete(d.calls, a.Calls[i].ID)
		d.dropped.Add(maphash.String(d.seed, a.Calls[i].ID))
	}
}

// wasDropped reports whether id may be the id of a dropped call.
func (d *decoder) wasDropped(id string) bool {
	if d.cut.Limit <= 0 {
		return false
	}
	return d.dropped.Has(maphash.String(d.seed, id))
}

func lineLoc(l jsonl.Line) trajectory.Locator {
	return trajectory.Locator{Unit: "line", First: l.N, Last: l.N, StartByte: l.Offset, EndByte: l.End}
}

// action returns the open action, opening a new one when a delimiter came
// since the last model item.
func (d *decoder) action(l jsonl.Line) *trajectory.Action {
	if d.cur < 0 || d.newResp {
		d.cut.Settle(d.t, d.drop)
		d.t.Actions = append(d.t.Actions, trajectory.Action{})
		d.cur = len(d.t.Actions) - 1
		d.newResp = false
	}
	a := &d.t.Actions[d.cur]
	a.Locator = a.Locator.Extend(lineLoc(l))
	return a
}

func (d *decoder) item(l jsonl.Line, p rec) error {
	typ := p.Get("payload.type")
	if typ.Type != gjson.String {
		if !gjson.Get(string(p), "payload").IsObject() {
			return trajectory.Errorf(l.N, "response_item record has no \"payload\" object")
		}
		return trajectory.Errorf(l.N, "response_item payload has no string \"type\"")
	}
	switch t := typ.Str; t {
	case "message":
		if p.Get("payload.role").Str != "assistant" {
			d.newResp = true
			return nil
		}
		if a := d.action(l); !d.cut.Done() {
			a.Text = join(a.Text, contentText(p.Get("payload.content"), ""))
		}
	case "reasoning":
		if a := d.action(l); !d.cut.Done() {
			a.Reasoning = join(a.Reasoning, reasoningText(p))
		}
	case "function_call":
		var args json.RawMessage
		if !d.cut.Done() {
			args = functionArgs(p.Get("payload.arguments"))
		}
		return d.call(l, p, keep(p.Get("payload.name")), args)
	case "custom_tool_call":
		// Freeform input (apply_patch's patch text) stays a JSON string.
		in := p.Get("payload.input")
		if in.Type != gjson.String {
			return trajectory.Errorf(l.N, "custom_tool_call has no string \"input\"")
		}
		return d.call(l, p, keep(p.Get("payload.name")), d.raw(in))
	case "local_shell_call":
		act := p.Get("payload.action")
		if !act.IsObject() {
			return trajectory.Errorf(l.N, "local_shell_call has no \"action\" object")
		}
		return d.call(l, p, "local_shell_call", d.raw(act))
	case "tool_search_call":
		return d.call(l, p, "tool_search", rawOr(p.Get("payload.arguments"), "{}"))
	case "web_search_call", "image_generation_call":
		d.action(l)
	default:
		switch {
		case strings.HasSuffix(t, "_output"):
			return d.output(l, p, t)
		case strings.HasSuffix(t, "_call") && p.Get("payload.call_id").Exists():
			// A client-side call kind this decoder does not know yet: keep it
			// so its output pairs and CheckReplayable names it.
			args := p.Get("payload.arguments")
			if !args.Exists() {
				args = p.Get("payload.action")
			}
			return d.call(l, p, t, rawOr(args, "{}"))
		case strings.HasSuffix(t, "_call"):
			d.action(l) // server-side, like web_search_call
		default:
			// ghost_snapshot, compaction, agent_message (another agent
			// speaking) and unknown items are not this model's output.
			d.newResp = true
		}
	}
	return nil
}

// raw copies a value's JSON text, unless its step will be dropped.
func (d *decoder) raw(r gjson.Result) json.RawMessage {
	if d.cut.Done() {
		return nil
	}
	return json.RawMessage(strings.Clone(r.Raw))
}

func rawOr(r gjson.Result, def string) json.RawMessage {
	if !r.Exists() {
		return json.RawMessage(def)
	}
	if r.Type == gjson.String {
		return functionArgs(r)
	}
	return json.RawMessage(strings.Clone(r.Raw))
}

// functionArgs turns the Responses API's JSON-in-a-string arguments into raw
// JSON; arguments that are not valid JSON (the model can emit those) are kept
// as a JSON string so CheckReplayable can say why it refuses them.
func functionArgs(r gjson.Result) json.RawMessage {
	switch r.Type {
	case gjson.String:
		s := keep(r)
		if gjson.Valid(s) {
			return json.RawMessage(strings.TrimSpace(s))
		}
		b, _ := json.Marshal(s)
		return b
	case gjson.JSON:
		return json.RawMessage(strings.Clone(r.Raw))
	}
	return json.RawMessage("{}")
}

func (d *decoder) call(l jsonl.Line, p rec, name string, args json.RawMessage) error {
	// call_id follows the (possibly huge) arguments in 0.40 lines; the raw
	// scanner finds it without parsing them a second time.
	id := p.field("call_id")
	if id.Type != gjson.String || id.Str == "" {
		id = p.field("id") // local_shell_call via Chat Completions
	}
	if id.Type != gjson.String || id.Str == "" {
		return trajectory.Errorf(l.N, "%s has no call_id", p.Get("payload.type").Str)
	}
	if name == "" {
		return trajectory.Errorf(l.N, "%s %s has no name", p.Get("payload.type").Str, id.Str)
	}
	if prev, dup := d.calls[id.Str]; dup {
		return trajectory.Errorf(l.N, "call_id %s is used again (first call at line %d)", id.Str,
			d.t.Actions[prev.action].Calls[prev.call].Locator.First)
	}
	if d.wasDropped(id.Str) {
		return trajectory.ErrNeedFull
	}
	a := d.action(l)
	a.Calls = append(a.Calls, trajectory.ToolCall{ID: keep(id), Name: name, Arguments: args, Locator: lineLoc(l)})
	d.calls[a.Calls[len(a.Calls)-1].ID] = callRef{d.cur, len(a.Calls) - 1}
	return nil
}

// output pairs a *_output item with its call. Outputs carry no status or
// error flag in any corpus version, and reading one after "output" would
// scan the whole output again.
func (d *decoder) output(l jsonl.Line, p rec, typ string) error {
	d.newResp = true
	id := p.Get("payload.call_id")
	if !id.Exists() {
		return nil // an output kind without a call link carries nothing to pair
	}
	ref, ok := d.calls[id.Str]
	if !ok && d.wasDropped(id.Str) {
		return trajectory.ErrNeedFull
	}
	if !ok {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: l.N,
			Msg:  typ + " for call_id " + strconv.Quote(id.Str) + " has no earlier call with that id",
			Hint: "the rollout is incomplete or was edited; pass the whole rollout file"}
	}
	a := &d.t.Actions[ref.action]
	c := &a.Calls[ref.call]
	if ref.action != d.cur {
		// The API refuses a request whose history lacks an output, so a later
		// response cannot start before this one's outputs are all written; a
		// file where it does could not be cut at a step boundary.
		return trajectory.Errorf(l.N, "%s for call_id %s (called at line %d) comes after a later model response began at line %d",
			typ, id.Str, c.Locator.First, d.t.Actions[d.cur].Locator.First)
	}
	if c.Observation != nil {
		return trajectory.Errorf(l.N, "second %s for call_id %s (the first is at line %d)", typ, id.Str, c.Observation.Locator.First)
	}
	var content string
	var isErr bool
	switch {
	case d.cut.Done():
		// a dropped step's output: only that it exists matters
	case typ == "tool_search_output":
		if !d.opts.SkipObservationContent {
			content = keep(p.Get("payload.tools"))
		}
	case d.opts.SkipObservationContent:
		if raw, ok := payloadField(string(p), "output"); ok && len(raw) > 0 && raw[0] == '"' {
			isErr = rawFailed(raw)
		} else if ok {
			_, isErr = outputContent(gjson.Parse(raw))
		}
	default:
		content, isErr = outputContent(p.Get("payload.output"))
	}
	c.Observation = &trajectory.Observation{Content: content, IsError: isErr, Locator: lineLoc(l)}
	a.Locator = a.Locator.Extend(c.Observation.Locator)
	return nil
}

// outputContent is the text the model saw. A string output is kept as is,
// including 0.40's JSON-in-a-string `{"output":…,"metadata":{…}}` wrapper:
// that whole string is what Codex sent. Newer CLIs may store an array of
// content items (input_text/input_image); its text items are joined with
// "\n" and images are dropped. The object form {content, success} is what
// an error payload looks like on the wire.
func outputContent(o gjson.Result) (string, bool) {
	switch {
	case o.Type == gjson.String:
		return keep(o), rawFailed(o.Raw)
	case o.IsArray():
		return contentText(o, "\n"), false
	case o.IsObject():
		if c := o.Get("content"); c.Type == gjson.String {
			return keep(c), o.Get("success").Type == gjson.False
		}
		if t := o.Get("text"); t.Type == gjson.String {
			return keep(t), false
		}
	case !o.Exists():
		return "", false
	}
	return strings.Clone(o.Raw), false
}

// failurePrefixes start the plain-text outputs codex-rs writes when it could
// not run a call at all (its payload's success:false is not stored). Besides
// the corpus ones: codex 0.171's "exec_command failed: CreateProcess …",
// "apply_patch verification failed: …", "patch rejected: empty patch",
// "unsupported call: update_plan" and argument parse errors, and 0.40's
// "error: <patch verification error>".
var failurePrefixes = []string{"failed in sandbox ", "execution error: ", "exec command rejected by user",
	"patch rejected by user", "write_stdin failed: ", "exec_command failed: ", "apply_patch verification failed: ",
	"patch rejected: ", "unsupported call: ", "failed to parse function arguments: ", "error: "}

// rawFailed reads the failure Codex reports inside an output string, given
// as its JSON literal: the 0.40 wrapper's metadata.exit_code, the "Process
// exited with code N" / "Exit code: N" header of unified exec and 0.17x
// apply_patch outputs, or one of failurePrefixes. None of the markers holds
// a character JSON escapes, except the wrapper's quotes and the newlines
// between header lines, which are matched in escaped form.
func rawFailed(raw string) bool {
	if len(raw) < 2 {
		return false
	}
	body := raw[1 : len(raw)-1]
	for _, p := range failurePrefixes {
		if strings.HasPrefix(body, p) {
			return true
		}
	}
	if strings.HasPrefix(body, `{\"output\":`) {
		const key = `\"exit_code\":`
		i := strings.LastIndex(body, key)
		return i >= 0 && nonZero(body[i+len(key):])
	}
	head := body[:min(len(body), 600)]
	if i := strings.Index(head, `\nOutput:`); i >= 0 {
		head = head[:i]
	}
	for ln := range strings.SplitSeq(head, `\n`) {
		for _, p := range []string{"Process exited with code ", "Exit code: "} {
			if rest, ok := strings.CutPrefix(ln, p); ok {
				return nonZero(rest)
			}
		}
	}
	return false
}

// nonZero reports whether s starts with an integer other than 0.
func nonZero(s string) bool {
	s = strings.TrimLeft(s, " ")
	n := 0
	for n < len(s) && (s[n] == '-' || s[n] >= '0' && s[n] <= '9') {
		n++
	}
	v, err := strconv.Atoi(s[:n])
	return err == nil && v != 0
}

// contentText concatenates the text parts of a content array.
func contentText(c gjson.Result, sep string) string {
	var b strings.Builder
	n := 0
	c.ForEach(func(_, part gjson.Result) bool {
		switch part.Get("type").Str {
		case "output_text", "input_text", "text":
			if n > 0 {
				b.WriteString(sep)
			}
			b.WriteString(part.Get("text").String())
			n++
		}
		return true
	})
	return b.String()
}

// reasoningText is the reasoning summary; models that return raw reasoning
// text instead (open-weight models behind other providers) fill content.
func reasoningText(p rec) string {
	var parts []string
	p.Get("payload.summary").ForEach(func(_, s gjson.Result) bool {
		if t := s.Get("text"); t.Type == gjson.String {
			parts = append(parts, t.String())
		}
		return true
	})
	if len(parts) == 0 {
		p.Get("payload.content").ForEach(func(_, s gjson.Result) bool {
			if t := s.Get("text"); t.Type == gjson.String {
				parts = append(parts, t.String())
			}
			return true
		})
	}
	return strings.Clone(strings.Join(parts, "\n\n"))
}

func join(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "\n\n" + b
}
