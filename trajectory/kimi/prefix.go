package kimi

import (
	"errors"
	"fmt"
	"io"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// WritePrefix writes the wire log up to the end of step afterStep (its
// step.end, or its last tool.result when it has none). The log is
// append-only, so that byte prefix is the log as it stood when the step
// was over. (Kimi appends the turn's
// agent.message.appended records and turn.ended only when a turn ends;
// a prefix cut inside a turn has none of them, as a crash would leave it.)
func (format) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	a, ok := t.Step(afterStep)
	if !ok {
		return &trajectory.Error{Kind: trajectory.Malformed, Msg: fmt.Sprintf("after-step %d: no such step", afterStep)}
	}
	end := a.Locator.EndByte
	for i := range a.Calls {
		if o := a.Calls[i].Observation; o != nil && o.Locator.EndByte > end {
			end = o.Locator.EndByte
		}
	}
	if end <= 0 || end > size {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: a.Locator.Last,
			Msg:  fmt.Sprintf("step %d ends at byte %d but the file has %d bytes", afterStep, end, size),
			Hint: "the file changed after it was decoded; decode it again"}
	}
	_, err := io.Copy(w, io.NewSectionReader(src, 0, end))
	return err
}

// PrefixModelTurns counts every model response up to and including the
// boundary step's: each step is one model request, text-only ones too.
func (format) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}

// ReplayTools is empty: this pvisor does not yet re-run Kimi's tools.
func (format) ReplayTools() []string { return nil }

// errNotYet is why a Kimi prefix is not re-run or continued yet.
var errNotYet = errors.New("re-running Kimi Code's tools (--replay-only) and continuing its sessions are not implemented yet; --prepare-only and inspect work")

// prefixTools are the tools whose effects stay in the workspace and the
// conversation, so a prefix holding them can be prepared. Agent,
// AgentSwarm, Task*, Cron*, WaitFor and the goal tools drive state outside
// the workspace (subagents, background tasks), AskUserQuestion waits for a
// person, FetchURL and WebSearch need the network.
var prefixTools = map[string]bool{"Bash": true, "Read": true, "ReadMediaFile": true, "Write": true,
	"Edit": true, "Glob": true, "Grep": true, "TodoList": true, "Skill": true,
	"EnterPlanMode": true, "ExitPlanMode": true}

// CheckReplayable accepts the workspace tools (a background shell aside);
// RefuseRun stops every run but --prepare-only before any call is re-run.
func (format) CheckReplayable(call *trajectory.ToolCall) error {
	if !prefixTools[call.Name] {
		return fmt.Errorf("%s is not a tool pvisor can re-run for Kimi Code", call.Name)
	}
	if call.Name == "Bash" && gjson.GetBytes(call.Arguments, "run_in_background").Bool() {
		return errors.New("Bash with run_in_background: a background task outlives the step")
	}
	return nil
}

// RefuseRun refuses --replay-only and continuation before anything runs
// (exit 11), instead of failing at the first tool call.
func (format) RefuseRun(_ *trajectory.Trajectory, _ bool) error { return errNotYet }
