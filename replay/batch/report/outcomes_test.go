package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/result"
)

// TestCompare pairs groups at one agent and boundary only, and leaves out
// a pair with nothing to count on both sides.
func TestCompare(t *testing.T) {
	g := func(up string, step, verified, pass, compared, exact int) Group {
		return Group{Agent: "codex", Upstream: up, AfterStep: step, Verified: verified, Verdicts: map[string]int{"pass": pass}, Compared: compared, ExactToolMatches: exact}
	}
	for _, tc := range []struct {
		name   string
		groups []Group
		want   []string // "step A B verify? exact?"
	}{
		{"two models, two boundaries", []Group{g("a", 1, 2, 2, 2, 1), g("a", 3, 2, 1, 2, 0), g("b", 1, 2, 0, 2, 0), g("b", 3, 2, 0, 2, 0)},
			[]string{"1 a b true true", "3 a b true true"}},
		{"no verify on one side", []Group{g("a", 1, 2, 2, 0, 0), g("b", 1, 0, 0, 2, 2)}, nil},
		{"verify only", []Group{g("a", 1, 3, 1, 0, 0), g("b", 1, 3, 3, 0, 0)}, []string{"1 a b true false"}},
		{"three models", []Group{g("a", 1, 1, 1, 0, 0), g("b", 1, 1, 0, 0, 0), g("c", 1, 1, 1, 0, 0)},
			[]string{"1 a b true false", "1 a c true false", "1 b c true false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range compare(tc.groups) {
				got = append(got, strings.Join([]string{itoa(c.AfterStep), strings.TrimSuffix(c.A, " · –"), strings.TrimSuffix(c.B, " · –"),
					boolStr(c.VerifyPass != nil), boolStr(c.ExactNextAction != nil)}, " "))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("comparisons (-want +got):\n%s", d)
			}
		})
	}
}

func itoa(n int) string     { b, _ := json.Marshal(n); return string(b) }
func boolStr(b bool) string { return map[bool]string{true: "true", false: "false"}[b] }

// TestRunSectionsEscape: a verify output, a diff and next actions are
// whatever the agent and the workspace made them, and stay text.
func TestRunSectionsEscape(t *testing.T) {
	hostile := "</pre><script>alert(1)</script>"
	code := 1
	rep := &Report{Runs: []Run{{
		Verify:  &Verify{ExitCode: &code, Verdict: "fail", OutputTail: hostile},
		Diff:    &RunDiff{text: "+" + hostile + "\n-" + hostile + "\n"},
		Actions: &Actions{Recorded: result.Action{Text: hostile}, Continued: result.Action{Tools: []result.ActionTool{{Name: hostile, Arguments: json.RawMessage(`"` + hostile + `"`)}}}},
	}}}
	rep.Runs[0].RunID = "r1"
	page := string(HTML(rep))
	if strings.Contains(page, "<script>") {
		t.Errorf("unescaped markup in:\n%s", page)
	}
	for _, want := range []string{`id="run-r1"`, `href="#run-r1"`, "<ins>+&lt;/pre&gt;", "<del>-&lt;/pre&gt;", "recorded next action"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
