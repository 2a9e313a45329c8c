package miniswe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// The action regexes of mini's own code (re.findall with re.DOTALL): v1.x
// DefaultAgent (1.15 onwards; earlier 1.x lacked the \s*, a subset of this
// one) and v2's LitellmTextbasedModel. A config may override them
// (info.config.agent.action_regex in 1.17+, info.config.model.action_regex
// in 2.x); the file's own regex wins when present.
const (
	regexV1 = "```bash\\s*\\n(.*?)\\n```"
	regexV2 = "```mswea_bash_command\\s*\\n(.*?)\\n```"
)

// msg is the part of one message the model needs. gjson strings point into
// a copy of the whole message, so kept strings are cloned.
type msg struct {
	role       string
	line       int
	text       string // visible text; empty for system messages and lean user/tool messages
	reasoning  string
	calls      []trajectory.ToolCall // from tool_calls
	actions    []trajectory.ToolCall // from extra.actions
	toolCallID string
	isErr      bool
	interrupt  string // extra.interrupt_type
	response   string // a FormatError's model text
}

type decoder struct {
	*jsondoc.Doc
	opts     trajectory.Options
	t        *trajectory.Trajectory
	msgs     []msg
	tf       string
	hasTF    bool
	regex    string
	seenMsgs bool
}

// Decode reads the document in one pass, keeping a lean copy of each
// message, and pairs actions with observations at the end: mini writes
// trajectory_format after messages, and the action regex depends on it.
func (format) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	d := &decoder{Doc: jsondoc.New(r), opts: opts, t: &trajectory.Trajectory{Agent: AgentName}}
	if err := d.read(); err != nil {
		return nil, err
	}
	if err := d.build(); err != nil {
		return nil, err
	}
	d.t.Lines = len(d.msgs)
	d.t.NumberSteps()
	return d.t, nil
}

func (d *decoder) read() error {
	tok, err := d.Open()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('['):
		d.t.Format = FormatBare
		if err := d.messages(); err != nil {
			return err
		}
		return d.End("the message list")
	case json.Delim('{'):
		if err := d.object(); err != nil {
			return err
		}
		return d.End("the trajectory")
	}
	return &trajectory.Error{Kind: trajectory.Malformed, Line: 1,
		Msg:  fmt.Sprintf("expected a mini-swe-agent trajectory (a JSON object), found %s", jsondoc.TokenKind(tok)),
		Hint: "pass the .traj.json file mini wrote"}
}

func (d *decoder) object() error {
	line := d.LineAt(d.Offset() - 1) // the opening brace's
	for d.More() {
		k, err := d.Key("trajectory")
		if err != nil {
			return err
		}
		if k == "messages" {
			if d.seenMsgs {
				return trajectory.Errorf(line, "the trajectory has two \"messages\" keys")
			}
			if err := d.Delim('[', "messages"); err != nil {
				return err
			}
			if err := d.messages(); err != nil {
				return err
			}
			continue
		}
		raw, vline, err := d.Raw(k)
		if err != nil {
			return err
		}
		v := gjson.ParseBytes(raw)
		switch k {
		case "trajectory_format":
			if v.Type != gjson.String {
				return trajectory.Errorf(vline, "trajectory_format is %s, not a string", jsondoc.Kind(v))
			}
			d.tf, d.hasTF = strings.Clone(v.Str), true
		case "info":
			d.t.Version = strings.Clone(v.Get("mini_version").String())
			if c := v.Get("config"); c.IsObject() {
				d.t.Config = json.RawMessage(strings.Clone(c.Raw))
				d.t.Cwd = strings.Clone(c.Get("environment.cwd").String())
			}
			for _, p := range []string{"config.agent.action_regex", "config.model.action_regex"} {
				if re := v.Get(p); re.Type == gjson.String && d.regex == "" {
					d.regex = strings.Clone(re.Str)
				}
			}
		case "instance_id":
			d.t.SessionID = strings.Clone(v.String())
		}
	}
	if err := d.Delim('}', "trajectory"); err != nil {
		return err
	}
	if !d.seenMsgs {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: line,
			Msg:  "the trajectory has no \"messages\"",
			Hint: "pass the .traj.json file mini wrote"}
	}
	switch {
	case !d.hasTF:
		// Files from before 1.7 carry no tag; the shape is the same.
		d.t.Format = FormatV1
	case d.tf == FormatV1 || d.tf == FormatV11:
		d.t.Format = d.tf
	default:
		return &trajectory.Error{Kind: trajectory.Unsupported, Line: line,
			Msg:  fmt.Sprintf("trajectory_format %q is not supported (known: %s, %s)", d.tf, FormatV1, FormatV11),
			Hint: "this pvisor predates that mini-swe-agent version"}
	}
	return nil
}

// messages reads the elements of the message array and its closing bracket.
func (d *decoder) messages() error {
	d.seenMsgs = true
	for d.More() {
		raw, line, err := d.Raw("messages")
		if err != nil {
			return err
		}
		m, err := d.message(raw, line, len(d.msgs))
		if err != nil {
			return err
		}
		d.msgs = append(d.msgs, m)
	}
	return d.Delim(']', "messages")
}

func (d *decoder) message(raw []byte, line, i int) (msg, error) {
	v := gjson.ParseBytes(raw)
	if !v.IsObject() {
		return msg{}, trajectory.Errorf(line, "message %d is %s, not an object", i, jsondoc.Kind(v))
	}
	m := msg{line: line}
	content := v.Get("content")
	responses := false
	switch role := v.Get("role"); {
	case role.Type == gjson.String:
		m.role = strings.Clone(role.Str)
	case v.Get("object").Str == "response":
		// LitellmResponseModel (OpenAI Responses API) stores the whole
		// response object as the assistant message.
		m.role, responses = "assistant", true
	case v.Get("type").Str == "function_call_output":
		m.role = "tool"
		m.toolCallID = strings.Clone(v.Get("call_id").String())
		content = v.Get("output")
	default:
		return msg{}, trajectory.Errorf(line, "message %d has no \"role\" string", i)
	}
	text, err := contentText(content)
	if err != nil {
		return msg{}, trajectory.Errorf(line, "message %d: %v", i, err)
	}
	extra := v.Get("extra")
	switch m.role {
	case "assistant":
		m.text = text
		m.reasoning = strings.Clone(v.Get("reasoning_content").String())
		if responses {
			m.text, m.reasoning, m.calls, err = responseOutput(v.Get("output"), i)
		} else {
			m.calls, err = toolCalls(v.Get("tool_calls"), i)
		}
		if err != nil {
			return msg{}, trajectory.Errorf(line, "message %d: %v", i, err)
		}
		if m.actions, err = extraActions(extra.Get("actions"), i); err != nil {
			return msg{}, trajectory.Errorf(line, "message %d: %v", i, err)
		}
	case "user", "tool":
		m.isErr = failed(extra, text)
		if m.toolCallID == "" {
			m.toolCallID = strings.Clone(v.Get("tool_call_id").String())
		}
		m.interrupt = strings.Clone(extra.Get("interrupt_type").String())
		if !d.opts.SkipObservationContent {
			m.text = text
		}
		if m.interrupt == "FormatError" {
			m.response = strings.Clone(extra.Get("model_response").String())
			if m.response == "" {
				m.response = strings.Clone(extra.Get("response.choices.0.message.content").String())
			}
		}
	}
	return m, nil
}

// contentText is the model-visible text of a content value. Lists of parts
// (cache-control markers, multimodal expansion) are concatenated with
// nothing in between: mini builds them by splitting one string.
func contentText(c gjson.Result) (string, error) {
	switch {
	case !c.Exists() || c.Type == gjson.Null:
		return "", nil
	case c.Type == gjson.String:
		return strings.Clone(c.Str), nil
	case c.IsArray():
		var b strings.Builder
		for _, p := range c.Array() {
			switch p.Get("type").Str {
			case "text", "input_text", "output_text":
				b.WriteString(p.Get("text").String())
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("content is %s, not a string or a list of parts", jsondoc.Kind(c))
}

func toolCalls(tc gjson.Result, i int) ([]trajectory.ToolCall, error) {
	if !tc.Exists() || tc.Type == gjson.Null {
		return nil, nil
	}
	if !tc.IsArray() {
		return nil, fmt.Errorf("tool_calls is %s, not an array", jsondoc.Kind(tc))
	}
	var out []trajectory.ToolCall
	for k, c := range tc.Array() {
		id := c.Get("id")
		if id.Type != gjson.String || id.Str == "" {
			return nil, fmt.Errorf("tool call %d has no id", k)
		}
		out = append(out, trajectory.ToolCall{
			ID:        strings.Clone(id.Str),
			Name:      strings.Clone(c.Get("function.name").String()),
			Arguments: arguments(c.Get("function.arguments")),
			Locator:   loc(i),
		})
	}
	return out, nil
}

// responseOutput reads a Responses API output list: message items are the
// text, reasoning summaries the reasoning, function_call items the calls.
func responseOutput(out gjson.Result, i int) (text, reasoning string, calls []trajectory.ToolCall, err error) {
	if !out.IsArray() {
		return "", "", nil, fmt.Errorf("the response's output is %s, not an array", jsondoc.Kind(out))
	}
	var tb, rb strings.Builder
	for k, item := range out.Array() {
		switch item.Get("type").Str {
		case "message":
			t, err := contentText(item.Get("content"))
			if err != nil {
				return "", "", nil, err
			}
			tb.WriteString(t)
		case "reasoning":
			for _, s := range item.Get("summary").Array() {
				if rb.Len() > 0 {
					rb.WriteByte('\n')
				}
				rb.WriteString(s.Get("text").String())
			}
		case "function_call":
			id := strings.Clone(item.Get("call_id").String())
			if id == "" {
				id = strings.Clone(item.Get("id").String())
			}
			if id == "" {
				return "", "", nil, fmt.Errorf("output item %d (function_call) has no call_id", k)
			}
			calls = append(calls, trajectory.ToolCall{ID: id, Name: strings.Clone(item.Get("name").String()),
				Arguments: arguments(item.Get("arguments")), Locator: loc(i)})
		}
	}
	return tb.String(), rb.String(), calls, nil
}

// arguments: the function arguments are a JSON-encoded string; a string that
// is not a JSON object stays a JSON string so CheckReplayable can say why.
func arguments(a gjson.Result) json.RawMessage {
	if a.IsObject() {
		return json.RawMessage(a.Raw)
	}
	s := strings.TrimSpace(a.String())
	if strings.HasPrefix(s, "{") && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return jsonString(a.String())
}

func extraActions(acts gjson.Result, i int) ([]trajectory.ToolCall, error) {
	if !acts.Exists() || acts.Type == gjson.Null {
		return nil, nil
	}
	if !acts.IsArray() {
		return nil, fmt.Errorf("extra.actions is %s, not an array", jsondoc.Kind(acts))
	}
	var out []trajectory.ToolCall
	for k, a := range acts.Array() {
		cmd := a.Get("command")
		if cmd.Type != gjson.String {
			return nil, fmt.Errorf("extra.actions[%d] has no \"command\" string", k)
		}
		id := strings.Clone(a.Get("tool_call_id").String())
		if id == "" {
			id = textCallID(i, k)
		}
		out = append(out, trajectory.ToolCall{ID: id, Name: ToolBash, Arguments: commandArgs(cmd.Str), Locator: loc(i)})
	}
	return out, nil
}

// textCallID names an action parsed from text, which has no native id.
func textCallID(i, k int) string {
	if k == 0 {
		return "message-" + strconv.Itoa(i)
	}
	return fmt.Sprintf("message-%d-%d", i, k)
}

func commandArgs(cmd string) json.RawMessage {
	return json.RawMessage(`{"command":` + string(jsonString(cmd)) + `}`)
}

func jsonString(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimRight(b.Bytes(), "\n")
}

// failed: v2 records the return code in extra; v1 only in the rendered
// "<returncode>N</returncode>" at the top of the observation.
func failed(extra gjson.Result, text string) bool {
	if rc := extra.Get("returncode"); rc.Type == gjson.Number {
		return rc.Int() != 0
	}
	if ei := extra.Get("exception_info"); ei.Type == gjson.String && ei.Str != "" {
		return true
	}
	head := text
	if len(head) > 512 {
		head = head[:512]
	}
	const open, end = "<returncode>", "</returncode>"
	i := strings.Index(head, open)
	if i < 0 {
		return false
	}
	rest := head[i+len(open):]
	j := strings.Index(rest, end)
	if j < 0 {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(rest[:j]))
	return err == nil && n != 0
}

func loc(i int) trajectory.Locator { return trajectory.Locator{Unit: "message", First: i, Last: i} }

func (d *decoder) actionRegex() (*regexp.Regexp, error) {
	src := d.regex
	if src == "" {
		src = regexV1
		if d.t.Format == FormatV11 {
			src = regexV2
		}
		if d.t.Format == FormatBare {
			// mini's tests keep bare lists for both generations; the fence
			// says which.
			for _, m := range d.msgs {
				if m.role == "assistant" && strings.Contains(m.text, "```mswea_bash_command") {
					src = regexV2
					break
				}
			}
		}
	}
	re, err := regexp.Compile("(?s)" + src)
	if err != nil {
		return nil, &trajectory.Error{Kind: trajectory.Unsupported,
			Msg:  fmt.Sprintf("the trajectory's action_regex %q uses syntax Go's regexp does not support: %v", src, err),
			Hint: "pvisor parses actions with RE2; lookarounds and backreferences are not available"}
	}
	return re, nil
}

// build pairs each assistant message's actions with their observations.
func (d *decoder) build() error {
	re, err := d.actionRegex()
	if err != nil {
		return err
	}
	for i := 0; i < len(d.msgs); i++ {
		m := &d.msgs[i]
		switch {
		case m.role == "assistant":
			a := trajectory.Action{Text: m.text, Reasoning: m.reasoning, Locator: loc(i)}
			byID := len(m.calls) > 0
			switch {
			case byID:
				a.Calls = m.calls
			case len(m.actions) > 0:
				a.Calls = m.actions
				byID = m.actions[0].ID != textCallID(i, 0)
			default:
				a.Calls = regexAction(re, m.text, i)
			}
			next, err := d.attach(&a, i, byID)
			if err != nil {
				return err
			}
			d.t.Actions = append(d.t.Actions, a)
			i = next - 1
		case m.role == "tool":
			return trajectory.Errorf(m.line, "message %d: tool result %q follows no assistant message with tool calls", i, m.toolCallID)
		case m.role == "user" && m.interrupt == "FormatError":
			d.t.Actions = append(d.t.Actions, trajectory.Action{Text: m.response, Locator: loc(i)})
		}
	}
	return nil
}

// attach finds the observations of a's calls after message i and returns the
// index of the first message it did not consume.
func (d *decoder) attach(a *trajectory.Action, i int, byID bool) (int, error) {
	j := i + 1
	if byID {
		for ; j < len(d.msgs) && d.msgs[j].role == "tool"; j++ {
			o := &d.msgs[j]
			k := -1
			for c := range a.Calls {
				if a.Calls[c].ID == o.toolCallID && a.Calls[c].Observation == nil {
					k = c
					break
				}
			}
			if k < 0 {
				return 0, trajectory.Errorf(o.line, "message %d: tool result %q answers no pending tool call of message %d", j, o.toolCallID, i)
			}
			d.observe(a, k, j)
		}
		return j, nil
	}
	for k := range a.Calls {
		if j >= len(d.msgs) || d.msgs[j].role != "user" || d.msgs[j].interrupt != "" {
			break
		}
		d.observe(a, k, j)
		j++
	}
	return j, nil
}

func (d *decoder) observe(a *trajectory.Action, k, j int) {
	o := &d.msgs[j]
	a.Calls[k].Observation = &trajectory.Observation{Content: o.text, IsError: o.isErr, Locator: loc(j)}
	a.Locator = a.Locator.Extend(loc(j))
}

// regexAction applies mini's rule: exactly one match is the action, any
// other count was a format error that executed nothing.
func regexAction(re *regexp.Regexp, text string, i int) []trajectory.ToolCall {
	ms := re.FindAllStringSubmatch(text, 2)
	if len(ms) != 1 {
		return nil
	}
	cmd := ms[0][0]
	if len(ms[0]) > 1 {
		cmd = ms[0][1]
	}
	return []trajectory.ToolCall{{ID: textCallID(i, 0), Name: ToolBash, Arguments: commandArgs(strings.TrimSpace(cmd)), Locator: loc(i)}}
}
