package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
)

// printSummary writes a few lines for a person about what a replay did:
// how many observations came back the same, and whether the continued
// agent took the recorded next action. It reads the run's own summary and
// next-action comparison; the JSON line on stdout stays the only output a
// script reads.
func printSummary(w io.Writer, res *result.Result) {
	var sum replay.Summary
	var next *result.NextActionComparison
	for _, a := range res.Artifacts {
		switch a.Role {
		case replay.RoleSummary:
			readJSON(a.Path, &sum)
		case replay.RoleNextActionComparison:
			next = &result.NextActionComparison{}
			if !readJSON(a.Path, next) {
				next = nil
			}
		}
	}
	agent := res.Agent.Type
	if res.Agent.Version != nil {
		agent += " " + *res.Agent.Version
	}
	fmt.Fprintf(w, "pvisor: %s, after step %d:\n", agent, res.AfterStep)
	if res.Phase == nil {
		fmt.Fprintf(w, "  nothing ran: %s\n", failureText(res))
		return
	}
	n := sum.ReplayedToolCalls
	switch {
	case *res.Phase == result.PhasePrepared && n == 0:
		fmt.Fprintf(w, "  prepared steps 1..%d; no tool ran\n", res.AfterStep)
	case n == 0:
		fmt.Fprintf(w, "  no tool call replayed\n")
	default:
		fmt.Fprintf(w, "  replayed %d tool call(s): %s\n", n, observationText(sum))
	}
	if next != nil {
		fmt.Fprintf(w, "  next action: %s\n", nextActionText(next))
	}
	switch {
	case res.Failure != nil:
		fmt.Fprintf(w, "  failed: %s\n", failureText(res))
	case *res.Phase == result.PhaseContinued:
		fmt.Fprintf(w, "  continuation: %s after %d live step(s)\n", strings.ReplaceAll(res.AgentStatus, "_", " "), res.ContinuedSteps)
	}
	if res.OutputDir != nil {
		fmt.Fprintf(w, "  outputs: %s\n", *res.OutputDir)
	}
}

func failureText(res *result.Result) string {
	if res.Failure == nil {
		return "no failure"
	}
	return res.Failure.Category
}

// observationText is "5/5 byte-exact", or how many match once run-to-run
// fields are masked and how many really differ.
func observationText(s replay.Summary) string {
	n := s.ReplayedToolCalls
	if s.DifferentObservations == 0 {
		return fmt.Sprintf("%d/%d observations match exactly", s.ExactObservations, n)
	}
	t := fmt.Sprintf("%d/%d observations match exactly, %d/%d once run-to-run fields (ids, times, paths) are masked",
		s.ExactObservations, n, s.ExactObservations+s.NormalizedExactObservations, n)
	if s.ReallyDifferent > 0 {
		t += fmt.Sprintf("; %d differ (observation-comparison.json has the diffs)", s.ReallyDifferent)
	}
	return t
}

// nextActionText says whether the continued agent did what the recording
// did next.
func nextActionText(c *result.NextActionComparison) string {
	m := c.Metrics
	names := func(a result.Action) string {
		var out []string
		for _, t := range a.Tools {
			out = append(out, t.Name)
		}
		if len(out) == 0 {
			return "text only"
		}
		return strings.Join(out, ", ")
	}
	var t string
	switch {
	case m.ToolArgumentsEqual && m.OrderedToolNamesEqual:
		t = "the agent took the recorded next action (" + names(c.Original) + ", same arguments)"
	case m.OrderedToolNamesEqual:
		t = "the agent called the recorded tools (" + names(c.Original) + ") with other arguments"
	default:
		t = "the agent did something else: recorded " + names(c.Original) + ", now " + names(c.Replayed)
	}
	if m.TextSimilarity != nil {
		t += fmt.Sprintf("; text similarity %.2f", *m.TextSimilarity)
	}
	return t
}

func readJSON(path string, v any) bool {
	data, err := os.ReadFile(path)
	return err == nil && json.Unmarshal(data, v) == nil
}
