// Package copilot reads GitHub Copilot CLI sessions: the events.jsonl of a
// session directory ($COPILOT_HOME/session-state/<uuid>/). Every line is one
// event {type, data, id, timestamp, parentId}. The file starts with
// session.start (data.sessionId, data.copilotVersion, data.context.cwd);
// a model response is an assistant.message whose data.toolRequests are the
// tool calls of that response, each answered by a tool.execution_complete
// with the same toolCallId. Everything else (turn marks, usage records,
// system.message, session.resume) is kept in the file but is not an action.
//
// A step is one assistant.message with tool requests, every result, and the
// assistant.turn_end that closes its turn. Locators count lines.
package copilot

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// SubFormat is the only sub-format (Trajectory.Format).
const SubFormat = "events-jsonl"

// The tools a replay re-executes, by Copilot's own names.
const (
	ToolBash   = "bash"
	ToolView   = "view"
	ToolCreate = "create"
	ToolEdit   = "edit"
	ToolGrep   = "grep"
	ToolGlob   = "glob"
)

var replayTools = []string{ToolBash, ToolView, ToolCreate, ToolEdit, ToolGrep, ToolGlob}

type format struct{}

// New returns the Copilot CLI events.jsonl format.
func New() trajectory.Format { return format{} }

func (format) Agent() string     { return AgentName }
func (format) PrefixExt() string { return "jsonl" }

// Detect claims a file whose first line is Copilot's session.start: the
// producer tag is what tells it from any other agent's JSONL. The head may
// be cut mid-line; gjson reads the keys before the cut, and session.start
// carries its producer before its context.
func (format) Detect(head []byte) bool {
	line := head
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		line = head[:i]
	}
	v := gjson.ParseBytes(line)
	return v.Get("type").Str == "session.start" && v.Get("data.producer").Str == "copilot-agent"
}

// ReplayTools lists the tools whose effects and output the replay re-creates.
func (format) ReplayTools() []string { return replayTools }

// CheckReplayable accepts the file and shell tools with the arguments the
// replay can honour: a shell started asynchronously (mode "async") keeps
// running between turns, which no re-execution of one call reproduces.
func (format) CheckReplayable(call *trajectory.ToolCall) error {
	args := gjson.ParseBytes(call.Arguments)
	if !args.IsObject() {
		return fmt.Errorf("the arguments are not a JSON object")
	}
	need := func(keys ...string) error {
		for _, k := range keys {
			if args.Get(gjson.Escape(k)).Type != gjson.String {
				return fmt.Errorf("the arguments have no %q string", k)
			}
		}
		return nil
	}
	switch call.Name {
	case ToolBash:
		if m := args.Get("mode").Str; m != "" && m != "sync" {
			return fmt.Errorf("a %q shell runs on after the call returns; only synchronous commands are re-executed", m)
		}
		return need("command")
	case ToolView:
		return need("path")
	case ToolCreate:
		return need("path", "file_text")
	case ToolEdit:
		return need("path", "old_str")
	case ToolGrep, ToolGlob:
		return need("pattern")
	}
	return fmt.Errorf("tool %q is not re-executed (the replay runs %v)", call.Name, replayTools)
}

// shellIDRe is the id in a bash result's trailer.
var shellIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<shellId: \d+ `) })

// NormalizeObservation masks the shell id of a bash result: Copilot numbers
// shells as they finish, so the ids of a batch of parallel commands change
// from run to run (measured: of two, the one that finished first got 0),
// while the replay runs them one after the other.
func (format) NormalizeObservation(content string) string {
	return shellIDRe().ReplaceAllString(content, "<shellId: N ")
}

// PrefixModelTurns counts every model response up to and including the
// boundary step's: each assistant.message was one model request.
func (format) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}

// WritePrefix copies the file's bytes up to the end of step afterStep (its
// turn_end included). Copilot appends events and resumes from the file as it
// stands, so a byte prefix is the native session at that point.
func (format) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	a, ok := t.Step(afterStep)
	if !ok {
		return &trajectory.Error{Kind: trajectory.Malformed, Msg: fmt.Sprintf("after-step %d: no such step", afterStep)}
	}
	end := a.Locator.EndByte
	if end <= 0 || end > size {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: a.Locator.Last,
			Msg:  fmt.Sprintf("step %d ends at byte %d but the file has %d bytes", afterStep, end, size),
			Hint: "the file changed after it was decoded; decode it again"}
	}
	_, err := io.Copy(w, io.NewSectionReader(src, 0, end))
	return err
}
