package report

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// Markdown renders the report's tables.
func Markdown(rep *Report) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Batch report\n\n%d runs from %s.\n\n", len(rep.Runs), md(strings.Join(rep.Sources, ", ")))
	b.WriteString(md(provenance(rep)) + "\n\n")
	if line := rep.SkippedLine(); line != "" {
		fmt.Fprintf(&b, "**%s.**\n\n", md(line))
	}
	b.WriteString("## Next action and observations per boundary\n\n")
	b.WriteString("| agent | CLI release | recorded by | upstream | after step | runs | failed | compared | tool-name agreement (95% CI) | exact-tool agreement (95% CI) | text similarity median (min–max) | observations exact / normalized / different | wall time mean (max) |\n")
	b.WriteString("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|\n")
	for _, g := range rep.Groups {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d | %d | %d | %s | %s | %s | %s | %s |\n",
			md(g.Agent), md(orDash(g.AgentVersion)), md(recordedCell(g.RecordedVersions)), md(g.Upstream), g.AfterStep, g.Runs, g.Failed, g.Compared,
			pctCI(g.ToolNameAgreement, g.ToolNameAgreementCI), pctCI(g.ExactToolAgreement, g.ExactToolAgreementCI), simCell(g.TextSimilarity), driftCell(g), wallCell(g.WallMS))
	}
	outcomesMarkdown(&b, rep)
	b.WriteString("\n## Failures by category\n\n")
	failures := failureTotals(rep)
	if len(failures) == 0 {
		b.WriteString("No run failed.\n")
	} else {
		b.WriteString("| category | runs |\n|---|---:|\n")
		for _, f := range failures {
			fmt.Fprintf(&b, "| %s | %d |\n", md(f.category), f.n)
		}
	}
	b.WriteString("\n## Runs\n\n| run | trajectory | CLI (recorded → continued) | after step | repeat | exit | tool names equal | text similarity | verify | tokens in / out · cost |\n|---|---|---|---:|---:|---:|---|---:|---|---:|\n")
	for _, r := range rep.Runs {
		names, sim := nextActionCells(r)
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %s | %s | %s | %s |\n", md(r.RunID), md(r.Trajectory), md(versionCell(r.RecordedVersion, r.AgentVersion)), r.AfterStep, r.Repeat, r.ExitCode, names, sim, md(verifyCell(r)), md(tokensCell(r)))
	}
	return b.Bytes()
}

// nextActionCells are a run's "tool names equal" and "text similarity".
func nextActionCells(r Run) (names, sim string) {
	names, sim = "–", "–"
	if na := r.NextAction; na != nil {
		names = fmt.Sprint(na.ToolNamesEqual)
		if na.TextSimilarity != nil {
			sim = fmt.Sprintf("%.2f", *na.TextSimilarity)
		}
	}
	return names, sim
}

type failureCount struct {
	category string
	n        int
}

func failureTotals(rep *Report) []failureCount {
	m := map[string]int{}
	for _, g := range rep.Groups {
		for c, n := range g.FailuresByCategory {
			m[c] += n
		}
	}
	var out []failureCount
	for c, n := range m {
		out = append(out, failureCount{c, n})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].n > out[j].n || out[i].n == out[j].n && out[i].category < out[j].category
	})
	return out
}

func pct(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", *v*100)
}

func simCell(d *Distribution) string {
	if d == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", d.Median, d.Min, d.Max)
}

func driftCell(g Group) string {
	s := g.DriftShares
	if s == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f%% / %.0f%% / %.0f%% of %d", s.Exact*100, s.NormalizedExact*100, s.Different*100, g.Observations.Calls)
}

func wallCell(d Distribution) string {
	return fmt.Sprintf("%.1fs (%.1fs)", d.Mean/1000, d.Max/1000)
}
