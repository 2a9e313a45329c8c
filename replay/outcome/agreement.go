package outcome

import (
	"fmt"

	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// AgreementActions is how many actions after the boundary are compared
// with the recording beyond the first: enough to see where a continuation
// leaves the recorded path, few enough to stay a summary.
const AgreementActions = 10

// ActionAgreement is metadata.action_agreement: how far the continuation
// followed the recorded trajectory after the boundary, action by action.
type ActionAgreement struct {
	// RecordedActions and ContinuedActions are the live actions after the
	// boundary on each side (at most AgreementActions are compared).
	RecordedActions  int `json:"recorded_actions"`
	ContinuedActions int `json:"continued_actions"`
	Compared         int `json:"compared"`
	// ToolsPrefix counts the leading actions whose ordered tool names
	// agree; ExactPrefix those whose calls agree, arguments too.
	ToolsPrefix int `json:"tools_prefix"`
	ExactPrefix int `json:"exact_prefix"`
	// FirstDivergence is the first action after the boundary (1-based)
	// whose tool names differ, or the first past the shorter side; nil when
	// the two agree on every action they both have and have as many.
	FirstDivergence *int `json:"first_divergence"`
	// RecordedTools and ContinuedTools are the tool names of each compared
	// action: the tool sequence a reader scans.
	RecordedTools  [][]string `json:"recorded_tools"`
	ContinuedTools [][]string `json:"continued_tools"`
}

// Agreement compares the live actions after afterStep of the recording
// and of the continuation (paths mapped back by back).
func Agreement(orig, cont *trajectory.Trajectory, afterStep int, back relocate.Paths) ActionAgreement {
	a, b := live(orig, afterStep), live(cont, afterStep)
	ag := ActionAgreement{RecordedActions: len(a), ContinuedActions: len(b), RecordedTools: [][]string{}, ContinuedTools: [][]string{}}
	for i := 0; i < AgreementActions && (i < len(a) || i < len(b)); i++ {
		var sa, sb *result.Action
		if i < len(a) {
			s := Signature(a[i], relocate.Paths{})
			sa = &s
			ag.RecordedTools = append(ag.RecordedTools, shortNames(names(s)))
		}
		if i < len(b) {
			s := Signature(b[i], back)
			sb = &s
			ag.ContinuedTools = append(ag.ContinuedTools, shortNames(names(s)))
		}
		if sa != nil && sb != nil {
			ag.Compared++
		}
		if ag.FirstDivergence != nil {
			continue
		}
		if sa == nil || sb == nil || !equalNames(names(*sa), names(*sb)) {
			n := i + 1
			ag.FirstDivergence = &n
			continue
		}
		ag.ToolsPrefix++
		if m := result.CompareNextAction(*sa, *sb, false).Metrics; m.ToolCountEqual && m.OrderedToolNamesEqual && m.ToolArgumentsEqual && ag.ExactPrefix == i {
			ag.ExactPrefix++
		}
	}
	return ag
}

// live lists the actions after afterStep that hold anything (see
// liveActions).
func live(t *trajectory.Trajectory, afterStep int) []*trajectory.Action {
	i := t.ActionIndex(afterStep)
	if i < 0 {
		return nil
	}
	var out []*trajectory.Action
	for k := i + 1; k < len(t.Actions); k++ {
		if a := &t.Actions[k]; a.Text != "" || a.Reasoning != "" || len(a.Calls) > 0 {
			out = append(out, a)
		}
	}
	return out
}

func names(a result.Action) []string {
	out := make([]string, len(a.Tools))
	for i, t := range a.Tools {
		out[i] = t.Name
	}
	return out
}

func equalNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// maxListedTools bounds the names listed per action: a response with
// thousands of calls is still one line of a summary.
const maxListedTools = 50

func shortNames(n []string) []string {
	if len(n) > maxListedTools {
		return append(n[:maxListedTools:maxListedTools], fmt.Sprintf("… %d more", len(n)-maxListedTools))
	}
	return n
}
