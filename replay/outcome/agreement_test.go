package outcome

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/trajectory"
)

// actions builds a trajectory from a spec such as "ls,cat|rg|-": one
// action per '|', its calls' names by ',' ("-" a text-only action), every
// call with arguments {"x":"<name>"} unless the name ends in '*'.
func actions(spec string) *trajectory.Trajectory {
	t := &trajectory.Trajectory{}
	for _, a := range strings.Split(spec, "|") {
		act := trajectory.Action{Text: "t"}
		if a != "-" {
			for _, name := range strings.Split(a, ",") {
				args, _ := json.Marshal(map[string]string{"x": name})
				if strings.HasSuffix(name, "*") {
					name, args = strings.TrimSuffix(name, "*"), []byte(`{"x":"other"}`)
				}
				act.Calls = append(act.Calls, trajectory.ToolCall{ID: name, Name: name, Arguments: args, Observation: &trajectory.Observation{}})
			}
		}
		t.Actions = append(t.Actions, act)
	}
	t.NumberSteps()
	return t
}

func TestActionAgreement(t *testing.T) {
	one := func(n int) *int { return &n }
	for _, tc := range []struct {
		name             string
		recorded, cont   string
		tools, exact     int
		first            *int
		recordedN, contN int
	}{
		{"same path", "p|a|b,c|-", "p|a|b,c|-", 3, 3, nil, 3, 3},
		{"arguments differ", "p|a|b", "p|a*|b", 2, 0, nil, 2, 2},
		{"diverges at the second", "p|a|b|c", "p|a|c|b", 1, 1, one(2), 3, 3},
		{"stops early", "p|a|b|c", "p|a", 1, 1, one(2), 3, 1},
		{"goes on", "p|a", "p|a|b", 1, 1, one(2), 1, 2},
		{"no action", "p|a", "p", 0, 0, one(1), 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ag := Agreement(actions(tc.recorded), actions(tc.cont), 1, relocate.Paths{})
			if ag.ToolsPrefix != tc.tools || ag.ExactPrefix != tc.exact || !cmp.Equal(ag.FirstDivergence, tc.first) ||
				ag.RecordedActions != tc.recordedN || ag.ContinuedActions != tc.contN {
				t.Errorf("agreement %+v", ag)
			}
		})
	}
}
