package opencode

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/rawjson"
)

// builder turns the parts of one step into an Action. Both sub-formats feed
// it the same part objects, so the rules live in one place.
type builder struct {
	t    *trajectory.Trajectory
	opts trajectory.Options
	cur  int // index in t.Actions of the open step, -1 when none is open
	// Text parts are kept apart until the step closes because a part can be
	// reported again with the same id (its final text replaces the first).
	texts, reasons []piece
	calls          map[string]int // callID → index in the open step's Calls
	// fixedLoc keeps the Action locator as opened: an export locates a step
	// by its message while parts are located by their index.
	fixedLoc bool
	// guessCwd derives Trajectory.Cwd from tool parts, for run events,
	// which do not record the session directory (see cwdFromPart).
	guessCwd bool
	// cut drops the steps after a DecodePrefix's boundary as they close.
	cut trajectory.Cutter
}

type piece struct{ id, text string }

func newBuilder(opts trajectory.Options) *builder {
	return &builder{t: &trajectory.Trajectory{Agent: AgentName}, opts: opts, cur: -1,
		calls: map[string]int{}}
}

func (b *builder) open(loc trajectory.Locator) {
	b.close()
	b.t.Actions = append(b.t.Actions, trajectory.Action{Locator: loc})
	b.cur = len(b.t.Actions) - 1
}

func (b *builder) isOpen() bool { return b.cur >= 0 }

// close joins the step's text parts with "\n", in part order.
func (b *builder) close() {
	if b.cur < 0 {
		return
	}
	a := &b.t.Actions[b.cur]
	a.Text = join(b.texts)
	a.Reasoning = join(b.reasons)
	b.texts, b.reasons = b.texts[:0], b.reasons[:0]
	clear(b.calls)
	b.cur = -1
	b.cut.Settle(b.t, nil)
}

func join(ps []piece) string {
	switch len(ps) {
	case 0:
		return ""
	case 1:
		return ps[0].text
	}
	var sb strings.Builder
	for i, p := range ps {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(p.text)
	}
	return sb.String()
}

func (b *builder) extend(loc trajectory.Locator) {
	if b.fixedLoc {
		return
	}
	a := &b.t.Actions[b.cur]
	a.Locator = a.Locator.Extend(loc)
}

// addText records a text or reasoning part of the open step.
func (b *builder) addText(part gjson.Result, reasoning bool, loc trajectory.Locator) {
	b.extend(loc)
	if b.cut.Done() {
		return // a dropped step's text
	}
	id := part.Get("id").Str
	txt := part.Get("text").Str
	list := &b.texts
	if reasoning {
		list = &b.reasons
	}
	if id != "" {
		for i := range *list {
			if (*list)[i].id == id {
				(*list)[i].text = strings.Clone(txt)
				return
			}
		}
	}
	*list = append(*list, piece{id: strings.Clone(id), text: strings.Clone(txt)})
}

// The members addTool reads; rawjson steps over the others (metadata repeats
// the output) without unescaping them. Without observation content, the
// output and error are stepped over too.
var (
	toolPartKeys      = []string{"callID", "tool", "state"}
	toolStateKeys     = []string{"status", "input", "output", "error", "title"}
	toolStateLeanKeys = []string{"status", "input", "title"}
)

// toolPart is what addTool reads of a tool part's own members.
type toolPart struct{ callID, name, state gjson.Result }

// member takes one member of a tool part; a repeated key's last value wins.
func (tp *toolPart) member(k, v gjson.Result) {
	switch k.Str {
	case "callID":
		tp.callID = v
	case "tool":
		tp.name = v
	case "state":
		tp.state = v
	}
}

// addTool records a tool part of the open step. Repeated reports of one
// callID (its state changes) merge into one call: the latest non-empty
// input wins and a completed/error state supplies the observation. It
// returns a description of what is wrong, "" when the part is fine.
func (b *builder) addTool(part gjson.Result, loc trajectory.Locator) string {
	// One pass per level: state.output (and metadata.output, a copy of it)
	// can be long, and separate lookups would scan it again each time.
	var tp toolPart
	rawjson.EachOf(part, toolPartKeys, func(k, v gjson.Result) bool {
		tp.member(k, v)
		return true
	})
	return b.addToolPart(tp, loc)
}

// addToolPart is addTool for a part whose members were already read.
func (b *builder) addToolPart(tp toolPart, loc trajectory.Locator) string {
	callID, name, state := tp.callID, tp.name, tp.state
	if callID.Type != gjson.String || callID.Str == "" {
		return "tool part has no callID"
	}
	id := callID.Str
	if name.Type != gjson.String || name.Str == "" {
		return fmt.Sprintf("tool part %s has no tool name", clip(id))
	}
	if !state.IsObject() {
		return fmt.Sprintf("tool part %s (%s) has no state object", clip(id), clip(name.Str))
	}
	lean := b.opts.SkipObservationContent || b.cut.Done()
	keys := toolStateKeys
	if lean {
		keys = toolStateLeanKeys
	}
	var status, input, output, errText, title gjson.Result
	rawjson.EachOf(state, keys, func(k, v gjson.Result) bool {
		switch k.Str {
		case "status":
			status = v
		case "input":
			input = v
		case "output":
			output = v
		case "error":
			errText = v
		case "title":
			title = v
		}
		return true
	})
	if input.Exists() && input.Type != gjson.Null && !input.IsObject() {
		return fmt.Sprintf("tool part %s (%s): state.input is not an object", clip(id), clip(name.Str))
	}
	var obs *trajectory.Observation
	switch status := status.Str; status {
	case "pending", "running":
	case "completed":
		obs = &trajectory.Observation{}
		if !lean {
			obs.Content = text(output)
		}
	case "error":
		obs = &trajectory.Observation{IsError: true}
		if !lean {
			obs.Content = text(errText)
		}
	default:
		return fmt.Sprintf("tool part %s (%s) has unknown state.status %q (want pending, running, completed or error)",
			clip(id), clip(name.Str), clip(status))
	}
	if obs != nil {
		obs.Locator = loc
	}
	if b.guessCwd && b.t.Cwd == "" && status.Str == "completed" {
		b.t.Cwd = cwdFromPart(name.Str, input, title.Str)
	}
	b.extend(loc)
	a := &b.t.Actions[b.cur]
	if i, ok := b.calls[id]; ok {
		c := &a.Calls[i]
		if c.Name != name.Str {
			return fmt.Sprintf("tool part %s changes its tool from %q to %q", clip(id), clip(c.Name), clip(name.Str))
		}
		if input.IsObject() && strings.TrimSpace(input.Raw) != "{}" && !b.cut.Done() {
			c.Arguments = rawJSON(input)
		}
		c.Locator = c.Locator.Extend(loc)
		if obs != nil {
			if c.Observation != nil {
				obs.Locator = c.Observation.Locator.Extend(loc)
			}
			c.Observation = obs
		}
		return ""
	}
	args := json.RawMessage(`{}`)
	if input.IsObject() && !b.cut.Done() {
		args = rawJSON(input)
	}
	b.calls[strings.Clone(id)] = len(a.Calls)
	a.Calls = append(a.Calls, trajectory.ToolCall{ID: strings.Clone(id), Name: strings.Clone(name.Str),
		Arguments: args, Observation: obs, Locator: loc})
	return ""
}

// cwdFromPart derives the session directory from a completed file tool:
// its title is the file's path relative to the worktree, so the absolute
// filePath minus the title is the worktree, which is where OpenCode runs
// unless it was started in a subdirectory of the repository.
func cwdFromPart(tool string, input gjson.Result, title string) string {
	switch tool {
	case "read", "write", "edit", "multiedit":
	default:
		return ""
	}
	p := input.Get("filePath").Str
	if title == "" || !strings.HasPrefix(p, "/") || strings.HasPrefix(title, "/") || strings.HasPrefix(title, "..") {
		return ""
	}
	if dir, ok := strings.CutSuffix(p, "/"+title); ok && dir != "" {
		return strings.Clone(dir)
	}
	return ""
}
