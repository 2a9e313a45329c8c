package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
)

func TestPrintSummary(t *testing.T) {
	f, tr := false, true
	sim := 0.93
	for _, tc := range []struct {
		name    string
		phase   string
		status  string
		steps   int
		summary replay.Summary
		next    *result.NextActionComparison
		want    []string
	}{
		{name: "continued, recorded action taken", phase: result.PhaseContinued, status: result.AgentCompleted, steps: 2,
			summary: replay.Summary{ReplayedToolCalls: 5, ExactObservations: 3, DifferentObservations: 2, NormalizedExactObservations: 2},
			next: &result.NextActionComparison{Original: result.Action{Tools: []result.ActionTool{{Name: "exec_command"}}},
				Metrics: result.NextActionMetrics{ToolCountEqual: true, OrderedToolNamesEqual: true, ToolArgumentsEqual: true, TextExact: &f, TextSimilarity: &sim}},
			want: []string{"3/5 observations match exactly, 5/5 once run-to-run fields", "took the recorded next action (exec_command, same arguments)",
				"text similarity 0.93", "completed after 2 live step(s)"}},
		{name: "other action, real drift", phase: result.PhaseContinued, status: result.AgentMaxSteps, steps: 1,
			summary: replay.Summary{ReplayedToolCalls: 4, ExactObservations: 2, DifferentObservations: 2, NormalizedExactObservations: 1, ReallyDifferent: 1},
			next: &result.NextActionComparison{Original: result.Action{Tools: []result.ActionTool{{Name: "Bash"}}},
				Replayed: result.Action{Tools: []result.ActionTool{{Name: "Read"}}}, Metrics: result.NextActionMetrics{TextExact: &tr}},
			want: []string{"2/4 observations match exactly, 3/4 once", "1 differ", "did something else: recorded Bash, now Read", "max steps after 1"}},
		{name: "replay-only, all exact", phase: result.PhaseReplayed,
			summary: replay.Summary{ReplayedToolCalls: 3, ExactObservations: 3},
			want:    []string{"replayed 3 tool call(s): 3/3 observations match exactly"}},
		{name: "prepare-only", phase: result.PhasePrepared,
			want: []string{"prepared steps 1..2; no tool ran"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res := result.New("r", "codex")
			res.SetPhase(tc.phase)
			res.AfterStep, res.ContinuedSteps, res.OutputDir = 2, tc.steps, &dir
			if tc.status != "" {
				res.AgentStatus = tc.status
			}
			write := func(role, name string, v any) {
				data, _ := json.Marshal(v)
				p := filepath.Join(dir, name)
				os.WriteFile(p, data, 0o644)
				res.Artifacts = append(res.Artifacts, result.Artifact{Role: role, Path: p})
			}
			write(replay.RoleSummary, "replay-summary.json", tc.summary)
			if tc.next != nil {
				write(replay.RoleNextActionComparison, "next-action-comparison.json", tc.next)
			}
			var out bytes.Buffer
			printSummary(&out, res)
			for _, w := range append(tc.want, "outputs: "+dir) {
				if !strings.Contains(out.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// The summary is printed with --summary (or on a terminal), never into
// a pipe by default; stdout stays the one JSON line either way.
func TestReplaySummaryFlag(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  bool
	}{{nil, false}, {[]string{"--summary"}, true}, {[]string{"--summary", "-q"}, true}} {
		dir := t.TempDir()
		traj := filepath.Join(dir, "s.jsonl")
		os.WriteFile(traj, []byte(claudeBase), 0o644)
		args := append([]string{"replay", "--prepare-only", "--agent", "claude-code", "--trajectory", traj, "--after-step", "1",
			"--state-dir", filepath.Join(dir, "st"), "--output-dir", filepath.Join(dir, "out")}, tc.flags...)
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.flags, code, stderr.String())
		}
		if got := strings.Contains(stderr.String(), "prepared steps 1..1"); got != tc.want {
			t.Errorf("%v: summary printed %v, want %v:\n%s", tc.flags, got, tc.want, stderr.String())
		}
		if n := bytes.Count(stdout.Bytes(), []byte("\n")); n != 1 || !json.Valid(stdout.Bytes()) {
			t.Errorf("%v: stdout is not one JSON line: %q", tc.flags, stdout.String())
		}
	}
}
