package outcome

import (
	"testing"

	"github.com/pvisor/pvisor/trajectory"
)

// TestLiveActions: the responses after the boundary are the continued
// steps; an empty response (a stopped request's record) is none.
func TestLiveActions(t *testing.T) {
	call := []trajectory.ToolCall{{ID: "c", Name: "bash", Observation: &trajectory.Observation{Content: "ok"}}}
	tr := &trajectory.Trajectory{Actions: []trajectory.Action{
		{Calls: call}, {Calls: call}, // steps 1, 2
		{Text: "again", Calls: call}, {Reasoning: "hmm"}, {Text: "done"},
		{}, // Pi 1.6: stopped at the budget, stopReason "aborted", no content
	}}
	tr.NumberSteps()
	for after, want := range map[int]int{1: 4, 2: 3, 3: 2} {
		if got := LiveActions(tr, after); got != want {
			t.Errorf("after step %d: %d live actions, want %d", after, got, want)
		}
	}
}
