package report

import (
	"strings"
	"testing"
)

func TestChartsStackDriftMarkGapsAndShowN(t *testing.T) {
	g := func(agent string, step, calls, exact, norm int) Group {
		runs := []Run{{Observations: &Drift{Calls: calls, Exact: exact, NormalizedExact: norm, Different: calls - exact - norm}}}
		runs[0].Agent, runs[0].AfterStep = agent, step
		x := group(runs)
		x.Upstream = "recorded"
		return x
	}
	rep := &Report{Groups: []Group{g("codex", 1, 8, 0, 8), g("codex", 2, 4, 1, 2), g("codex", 4, 2, 2, 0), g("pi", 1, 2, 2, 0)}}
	page := string(HTML(rep))
	for _, tc := range []struct {
		name string
		want string
		n    int
	}{
		// Codex's observations are all equal once normalized: the stack says
		// so instead of reading 0% exact.
		{"normalized share", `y="34.0" width="35.7" height="120.0" fill="` + colorNorm + `"><title>codex · recorded after step 1: equal once normalized 100% of 8 calls (95% CI 68%–100%)</title>`, 1},
		{"three parts", `after step 2: different 25% of 4 calls`, 1},
		{"exact", `after step 4: exact 100% of 2 calls`, 1},
		// Boundaries 1, 2, 4: one gap mark, between 2 and 4, in each panel
		// of each of the two figures.
		{"gap", `<title>no boundary between 2 and 4 in this study</title>`, 4},
		{"no gap 1-2", `between 1 and 2`, 0},
		{"n", `>n=8</text>`, 1},
		{"panels", `<svg class="panel"`, 4},
	} {
		if got := strings.Count(page, tc.want); got != tc.n {
			t.Errorf("%s: %q appears %d times, want %d", tc.name, tc.want, got, tc.n)
		}
	}
}
