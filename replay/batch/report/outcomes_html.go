package report

import (
	"bytes"
	"fmt"
	"html"
	"strings"

	"github.com/pvisor/pvisor/result"
)

// maxRunSections bounds the per-run sections of the HTML page: past it the
// runs table and each run's files still say everything.
const maxRunSections = 200

// hasOutcomes says whether any group has verify or token figures.
func hasOutcomes(rep *Report) bool {
	for _, g := range rep.Groups {
		if g.Verified > 0 || g.WithTokens > 0 || g.AgreeingActions != nil {
			return true
		}
	}
	return false
}

// outcomeCells are a group's verify, token and cost cells.
func outcomeCells(g Group) (agree, verify, verdicts, tokens, cost string) {
	agree, verify, verdicts, tokens, cost = "–", "–", "–", "–", "–"
	if d := g.AgreeingActions; d != nil {
		agree = fmt.Sprintf("%.1f (%.0f–%.0f)", d.Mean, d.Min, d.Max)
	}
	if g.Verified > 0 {
		verify = fmt.Sprintf("%s of %d", pctCI(g.VerifyPass, g.VerifyPassCI), g.Verified)
		verdicts = fmt.Sprintf("%d / %d / %d", g.Verdicts["pass"], g.Verdicts["fail"], g.Verdicts["error"])
	}
	if t := g.Tokens; t != nil {
		n := int64(g.WithTokens)
		tokens = fmt.Sprintf("%d / %d (%d runs)", t.Input/n, t.Output/n, g.WithTokens)
	}
	if g.Cost != nil {
		cost = fmt.Sprintf("%.4f", *g.Cost)
	}
	return
}

const outcomeHeader = "agent|CLI release|upstream|after step|runs|actions following the recording, mean (min–max)|verify pass (95% CI)|pass / fail / error|tokens in / out per run|cost"

func outcomesHTML(b *bytes.Buffer, rep *Report) {
	if !hasOutcomes(rep) {
		return
	}
	b.WriteString("<h2>Outcomes per boundary</h2>\n<p>Verify pass is the share of graded runs whose verify command exited 0. Tokens are as the model service reported them; cost only where the study gives prices (– when unknown).</p>\n<table id=\"outcomes\">" + headerRow(outcomeHeader))
	for _, g := range rep.Groups {
		agree, v, vs, tok, cost := outcomeCells(g)
		cells := []string{g.Agent, orDash(g.AgentVersion), g.Upstream, fmt.Sprint(g.AfterStep), fmt.Sprint(g.Runs), agree, v, vs, tok, cost}
		b.WriteString(row(cells))
	}
	b.WriteString("</table>\n")
}

func comparisonsHTML(b *bytes.Buffer, rep *Report) {
	if len(rep.Comparisons) == 0 {
		return
	}
	b.WriteString("<h2>Comparisons</h2>\n<p>A − B at the same boundary, with Newcombe's 95% interval of the difference (hybrid score). An interval that contains 0 does not tell the two apart.</p>\n<table id=\"comparisons\">" +
		headerRow("agent|after step|A|B|verify pass A|verify pass B|difference (95% CI)|exact next action A|exact next action B|difference (95% CI)"))
	for _, c := range rep.Comparisons {
		va, vb, vd := diffCells(c.VerifyPass)
		ea, eb, ed := diffCells(c.ExactNextAction)
		b.WriteString(row([]string{c.Agent, fmt.Sprint(c.AfterStep), c.A, c.B, va, vb, vd, ea, eb, ed}))
	}
	b.WriteString("</table>\n")
}

// diffCells are share A, share B and the difference with its interval.
func diffCells(d *Difference) (a, b, diff string) {
	if d == nil {
		return "–", "–", "–"
	}
	share := func(s Share) string { return fmt.Sprintf("%.0f%% (%d/%d)", s.Share*100, s.K, s.N) }
	return share(d.A), share(d.B), fmt.Sprintf("%+.0f pp (%+.0f to %+.0f)", d.Diff*100, d.CI.Low*100, d.CI.High*100)
}

func headerRow(cols string) string {
	var sb strings.Builder
	sb.WriteString("<tr>")
	for _, c := range strings.Split(cols, "|") {
		sb.WriteString("<th>" + html.EscapeString(c) + "</th>")
	}
	return sb.String() + "</tr>\n"
}

func row(cells []string) string {
	var sb strings.Builder
	sb.WriteString("<tr>")
	for _, c := range cells {
		sb.WriteString("<td>" + html.EscapeString(c) + "</td>")
	}
	return sb.String() + "</tr>\n"
}

// runAnchor is the id of a run's section (run ids are [A-Za-z0-9_-]).
func runAnchor(r Run) string { return "run-" + r.RunID }

// hasSection says whether the run gets a section of its own.
func hasSection(r Run) bool {
	return r.Verify != nil || r.Diff != nil || r.Actions != nil || r.Failure != nil
}

// runSectionsHTML writes one section per run with anything to show: its
// verify outcome, workspace diff, the recorded and the continued next
// action side by side, and its failure.
func runSectionsHTML(b *bytes.Buffer, rep *Report) {
	n := 0
	for _, r := range rep.Runs {
		if hasSection(r) {
			n++
		}
	}
	if n == 0 {
		return
	}
	b.WriteString("<h2>Run details</h2>\n")
	if n > maxRunSections {
		fmt.Fprintf(b, "<p>The first %d of %d runs; each run's output dir has the rest.</p>\n", maxRunSections, n)
	}
	shown := 0
	for _, r := range rep.Runs {
		if !hasSection(r) {
			continue
		}
		if shown == maxRunSections {
			break
		}
		shown++
		fmt.Fprintf(b, "<section class=\"run\" id=\"%s\"><h3>%s</h3>\n<p>%s after step %d, repeat %d · %s · <a href=\"%s\">result.json</a></p>\n",
			html.EscapeString(runAnchor(r)), html.EscapeString(r.RunID), html.EscapeString(r.Trajectory), r.AfterStep, r.Repeat,
			html.EscapeString(r.Upstream), html.EscapeString(rep.link(r)))
		if r.Failure != nil {
			fmt.Fprintf(b, "<p class=\"failure\">%s</p>\n", failureCell(r.Failure))
		}
		if v := r.Verify; v != nil {
			code := "–"
			if v.ExitCode != nil {
				code = fmt.Sprint(*v.ExitCode)
			}
			fmt.Fprintf(b, "<p>verify: <b class=\"verdict-%s\">%s</b>, exit %s, %.1fs%s</p>\n", html.EscapeString(v.Verdict), html.EscapeString(v.Verdict), code, v.Seconds, html.EscapeString(errSuffix(v.Error)))
			if v.OutputTail != "" {
				fmt.Fprintf(b, "<details><summary>verify output (end)</summary><pre>%s</pre></details>\n", html.EscapeString(v.OutputTail))
			}
		}
		if d := r.Diff; d != nil {
			if d.text == "" {
				b.WriteString("<p>workspace diff: the continuation changed nothing.</p>\n")
			} else {
				fmt.Fprintf(b, "<details open><summary>workspace diff (<a href=\"%s\">workspace.diff</a>)</summary><pre class=\"diff\">%s</pre></details>\n",
					html.EscapeString(rep.rel(d.Path)), diffHTML(d.text))
			}
		}
		if a := r.Agreement; a != nil {
			first := "none within the actions compared"
			if a.FirstDivergence != nil {
				first = fmt.Sprintf("action %d", *a.FirstDivergence)
			}
			fmt.Fprintf(b, "<p>after the boundary: %d recorded and %d continued actions; %d followed the recording by tool names, %d exactly; first divergence: %s.</p>\n",
				a.RecordedActions, a.ContinuedActions, a.ToolsPrefix, a.ExactPrefix, first)
			b.WriteString("<table class=\"agreement\"><tr><th>#</th><th>recorded tools</th><th>continued tools</th></tr>\n")
			for i := 0; i < max(len(a.RecordedTools), len(a.ContinuedTools)) && i < 20; i++ {
				b.WriteString(row([]string{fmt.Sprint(i + 1), toolsAt(a.RecordedTools, i), toolsAt(a.ContinuedTools, i)}))
			}
			b.WriteString("</table>\n")
		}
		if a := r.Actions; a != nil {
			b.WriteString("<table class=\"sidebyside\"><tr><th>recorded next action</th><th>continued next action</th></tr>\n<tr>")
			for _, x := range []result.Action{a.Recorded, a.Continued} {
				fmt.Fprintf(b, "<td class=\"action\">%s</td>", actionHTML(x))
			}
			b.WriteString("</tr></table>\n")
		}
		b.WriteString("</section>\n")
	}
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}

// diffHTML colours added and removed lines.
func diffHTML(text string) string {
	var sb strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		esc := html.EscapeString(line)
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			sb.WriteString(esc)
		case strings.HasPrefix(line, "+"):
			sb.WriteString("<ins>" + esc + "</ins>")
		case strings.HasPrefix(line, "-"):
			sb.WriteString("<del>" + esc + "</del>")
		default:
			sb.WriteString(esc)
		}
	}
	return sb.String()
}

func actionHTML(a result.Action) string {
	var sb strings.Builder
	if a.Reasoning != "" {
		sb.WriteString("<p class=\"reasoning\">" + html.EscapeString(a.Reasoning) + "</p>")
	}
	if a.Text != "" {
		sb.WriteString("<p>" + html.EscapeString(a.Text) + "</p>")
	}
	for _, t := range a.Tools {
		sb.WriteString("<p><b>" + html.EscapeString(t.Name) + "</b> <code>" + html.EscapeString(string(t.Arguments)) + "</code></p>")
	}
	if sb.Len() == 0 {
		return "<p>–</p>"
	}
	return sb.String()
}

// verifyCell is a run's verdict for the runs tables.
func verifyCell(r Run) string {
	if r.Verify == nil {
		return "–"
	}
	return r.Verify.Verdict
}

// tokensCell is a run's tokens (and cost) for the runs tables.
func tokensCell(r Run) string {
	if r.Tokens == nil {
		return "–"
	}
	s := fmt.Sprintf("%d / %d", r.Tokens.Input, r.Tokens.Output)
	if r.Cost != nil {
		s += fmt.Sprintf(" · %.4f", *r.Cost)
	}
	return s
}

// outcomesMarkdown is the Markdown form of the outcome and comparison
// tables.
func outcomesMarkdown(b *bytes.Buffer, rep *Report) {
	if hasOutcomes(rep) {
		b.WriteString("\n## Outcomes per boundary\n\n" + mdHeader(outcomeHeader))
		for _, g := range rep.Groups {
			agree, v, vs, tok, cost := outcomeCells(g)
			b.WriteString(mdRow([]string{g.Agent, orDash(g.AgentVersion), g.Upstream, fmt.Sprint(g.AfterStep), fmt.Sprint(g.Runs), agree, v, vs, tok, cost}))
		}
	}
	if len(rep.Comparisons) > 0 {
		b.WriteString("\n## Comparisons (A − B, Newcombe 95% interval)\n\n" +
			mdHeader("agent|after step|A|B|verify pass A|verify pass B|difference (95% CI)|exact next action A|exact next action B|difference (95% CI)"))
		for _, c := range rep.Comparisons {
			va, vb, vd := diffCells(c.VerifyPass)
			ea, eb, ed := diffCells(c.ExactNextAction)
			b.WriteString(mdRow([]string{c.Agent, fmt.Sprint(c.AfterStep), c.A, c.B, va, vb, vd, ea, eb, ed}))
		}
	}
}

func mdHeader(cols string) string {
	n := strings.Count(cols, "|") + 1
	return "| " + strings.ReplaceAll(cols, "|", " | ") + " |\n|" + strings.Repeat("---|", n) + "\n"
}

func mdRow(cells []string) string {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = md(c)
	}
	return "| " + strings.Join(esc, " | ") + " |\n"
}

// toolsAt is the i-th action's tool names ("text" for none, "–" past the
// end).
func toolsAt(tools [][]string, i int) string {
	if i >= len(tools) {
		return "–"
	}
	if len(tools[i]) == 0 {
		return "(text)"
	}
	var names []string
	for _, n := range tools[i] {
		names = append(names, clip(n, 100))
	}
	if len(names) > 20 {
		names = append(names[:20], "…")
	}
	return strings.Join(names, ", ")
}
