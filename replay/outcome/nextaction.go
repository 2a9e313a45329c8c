// Package outcome says what a continuation did against the recording: the
// next action after the boundary (the pVisor comparison), how far the next
// actions follow the recorded ones, and how many live steps the agent took.
package outcome

import (
	"bytes"
	"encoding/json"

	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// ActionAfter returns the model response that follows step afterStep: the
// recorded A(N+1), or in a continued session the agent's first live action.
// Text-only responses count; nil when there is none.
func ActionAfter(t *trajectory.Trajectory, afterStep int) *trajectory.Action {
	i := t.ActionIndex(afterStep)
	if i < 0 || i+1 >= len(t.Actions) {
		return nil
	}
	return &t.Actions[i+1]
}

// LiveActions counts the responses after step afterStep. A response with
// nothing in it (no text, reasoning or call) is no step the model took: it
// is the record an agent writes for a request that never got an answer
// (Pi 1.6 stores an empty "aborted" message when it is stopped at the step
// budget).
func LiveActions(t *trajectory.Trajectory, afterStep int) int {
	i := t.ActionIndex(afterStep)
	if i < 0 {
		return 0
	}
	n := 0
	for _, a := range t.Actions[i+1:] {
		if a.Text != "" || a.Reasoning != "" || len(a.Calls) > 0 {
			n++
		}
	}
	return n
}

// Signature is the comparable form of an action, with paths mapped by p: a
// continued agent works in the replay's workspace, and its paths are mapped
// back to the recorded directory so that the same action in another place
// compares equal.
func Signature(a *trajectory.Action, p relocate.Paths) result.Action {
	s := result.Action{Text: p.String(a.Text), Reasoning: p.String(a.Reasoning), Tools: []result.ActionTool{}}
	for _, c := range a.Calls {
		args := c.Arguments
		if out, _, err := p.JSON(args); err == nil {
			args = out
		}
		s.Tools = append(s.Tools, result.ActionTool{Name: c.Name, Arguments: json.RawMessage(bytes.Clone(args))})
	}
	return s
}
