package report

import (
	"bytes"
	"fmt"
	"html"
	"strings"
)

// HTML renders a self-contained page: inline CSS and SVG, no script, no
// external font or image, so it opens anywhere and can be archived as is.
func HTML(rep *Report) []byte {
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>pvisor batch report</title>
<style>
body{font-family:sans-serif;margin:2em;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th:first-child,td:first-child,td:nth-child(2){text-align:left}
svg{background:#fff;border:1px solid #ddd;margin:0 .5em .5em 0}
svg text{font:11px sans-serif;fill:#333}
svg text.n,svg text.gap{fill:#666}
figure{margin:0 0 1.5em 0}
figcaption{font-size:13px;margin-bottom:.4em}
td.failure{text-align:left;max-width:36em;white-space:pre-wrap;word-break:break-word}
pre{background:#f7f7f7;padding:.5em;overflow-x:auto;font-size:12px;max-height:40em}
pre ins{color:#1a7f37;text-decoration:none}
pre del{color:#cf222e;text-decoration:none}
section.run{border-top:1px solid #ddd;margin-top:1em}
table.sidebyside{table-layout:fixed;width:100%}
table.sidebyside td,table.sidebyside th,table.agreement td,table.agreement th{text-align:left;vertical-align:top;word-break:break-word}
.verdict-pass{color:#1a7f37}.verdict-fail,.verdict-error{color:#cf222e}
</style></head><body>
`)
	fmt.Fprintf(&b, "<h1>Batch report</h1>\n<p>%d runs from %s.</p>\n", len(rep.Runs), html.EscapeString(strings.Join(rep.Sources, ", ")))
	fmt.Fprintf(&b, "<p>%s</p>\n", html.EscapeString(provenance(rep)))
	if line := rep.SkippedLine(); line != "" {
		fmt.Fprintf(&b, "<p><strong>%s.</strong></p>\n", html.EscapeString(line))
	}
	series := seriesOf(rep)
	agreementFigure(&b, series)
	driftFigure(&b, series)
	histChart(&b, "plot-similarity", "Text similarity of the next action", series)
	b.WriteString("<h2>Per boundary</h2>\n<table><tr><th>agent</th><th>CLI release</th><th>recorded by</th><th>upstream</th><th>after step</th><th>runs</th><th>failed</th><th>compared</th><th>tool-name agreement (95% CI)</th><th>exact-tool agreement (95% CI)</th><th>text similarity median (min–max)</th><th>observations exact / normalized / different</th><th>wall time mean (max)</th></tr>\n")
	for _, g := range rep.Groups {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			html.EscapeString(g.Agent), html.EscapeString(orDash(g.AgentVersion)), html.EscapeString(recordedCell(g.RecordedVersions)), html.EscapeString(g.Upstream), g.AfterStep, g.Runs, g.Failed, g.Compared,
			pctCI(g.ToolNameAgreement, g.ToolNameAgreementCI), pctCI(g.ExactToolAgreement, g.ExactToolAgreementCI), simCell(g.TextSimilarity), driftCell(g), wallCell(g.WallMS))
	}
	b.WriteString("</table>\n")
	outcomesHTML(&b, rep)
	comparisonsHTML(&b, rep)
	b.WriteString("<h2>Failures by category</h2>\n")
	if f := failureTotals(rep); len(f) == 0 {
		b.WriteString("<p>No run failed.</p>\n")
	} else {
		b.WriteString("<table><tr><th>category</th><th>runs</th></tr>\n")
		for _, c := range f {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td></tr>\n", html.EscapeString(c.category), c.n)
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("<h2>Runs</h2>\n<p>Each run id links to its result.json (its batch record when it wrote none).</p>\n")
	b.WriteString("<table><tr><th>run</th><th>trajectory</th><th>CLI (recorded → continued)</th><th>after step</th><th>repeat</th><th>exit</th><th>tool names equal</th><th>text similarity</th><th>verify</th><th>tokens in / out · cost</th><th>details</th><th>failure</th></tr>\n")
	sections := 0
	for _, r := range rep.Runs {
		names, sim := nextActionCells(r)
		details := "–"
		if hasSection(r) && sections < maxRunSections {
			sections++
			details = fmt.Sprintf("<a href=\"#%s\">details</a>", html.EscapeString(runAnchor(r)))
		}
		fmt.Fprintf(&b, "<tr><td><a href=\"%s\">%s</a></td><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"failure\">%s</td></tr>\n",
			html.EscapeString(rep.link(r)), html.EscapeString(r.RunID), html.EscapeString(r.Trajectory), html.EscapeString(versionCell(r.RecordedVersion, r.AgentVersion)), r.AfterStep, r.Repeat, r.ExitCode, names, sim,
			html.EscapeString(verifyCell(r)), html.EscapeString(tokensCell(r)), details, failureCell(r.Failure))
	}
	b.WriteString("</table>\n")
	runSectionsHTML(&b, rep)
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// series is one agent × upstream, its groups in boundary order.
type series struct {
	name   string
	groups []Group
}

func seriesOf(rep *Report) []series {
	var out []series
	for _, g := range rep.Groups {
		name := g.Agent
		if g.AgentVersion != "" {
			name += " " + g.AgentVersion
		}
		name += " · " + g.Upstream
		if len(out) == 0 || out[len(out)-1].name != name {
			out = append(out, series{name: name})
		}
		out[len(out)-1].groups = append(out[len(out)-1].groups, g)
	}
	return out
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// Plot geometry; the legend, one entry per line, grows the plot downwards.
const (
	plotW                = 520
	left, right, top     = 50, 20, 30
	innerW, innerH       = plotW - left - right, 200
	legendTop, legendRow = top + innerH + 48, 14
)

func frame(b *bytes.Buffer, id, title, ylabel string, entries int) {
	h := legendTop + entries*legendRow
	fmt.Fprintf(b, `<svg id="%s" class="plot" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n",
		id, plotW, h, plotW, h, html.EscapeString(title))
	fmt.Fprintf(b, `<text x="%d" y="18" style="font-size:13px;font-weight:bold">%s</text>`+"\n", left, html.EscapeString(title))
	for i := 0; i <= 4; i++ {
		y := top + innerH - innerH*i/4
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#eee"/><text x="%d" y="%d" text-anchor="end">%d%%</text>`+"\n",
			left, y, left+innerW, y, left-4, y+4, i*25)
	}
	fmt.Fprintf(b, `<text transform="translate(12,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+innerH/2, html.EscapeString(ylabel))
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, top+innerH, left+innerW, top+innerH)
}

func legend(b *bytes.Buffer, i int, name, color string, dashed bool) {
	x, y := left, legendTop-4+i*legendRow
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="5,3"`
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`+"\n",
		x, y-4, x+20, y-4, color, dash, x+25, y, html.EscapeString(name))
}

func yOf(v float64) float64 { return float64(top) + float64(innerH)*(1-v) }

// histChart shows, per series, the share of compared runs in each tenth of
// text similarity.
func histChart(b *bytes.Buffer, id, title string, ss []series) {
	frame(b, id, title, "share of compared runs", len(ss))
	bins := 10
	slot := float64(innerW) / float64(bins)
	for i := 0; i < bins; i++ {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%.1f</text>`+"\n", float64(left)+slot*float64(i), top+innerH+14, float64(i)/10)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">1.0</text><text x="%d" y="%d" text-anchor="middle">similarity</text>`+"\n",
		left+innerW, top+innerH+14, left+innerW/2, top+innerH+28)
	if len(ss) == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">no data</text>`+"\n", left+innerW/2, top+innerH/2)
	}
	barW := slot / float64(max(len(ss), 1))
	for si, s := range ss {
		h := make([]int, bins)
		n := 0
		for _, g := range s.groups {
			if g.TextSimilarity == nil {
				continue
			}
			for i, c := range g.TextSimilarity.Histogram {
				h[i] += c
				n += c
			}
		}
		color := palette[si%len(palette)]
		for i, c := range h {
			if c == 0 {
				continue
			}
			share := float64(c) / float64(n)
			fmt.Fprintf(b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %.1f–%.1f: %d runs</title></rect>`+"\n",
				float64(left)+slot*float64(i)+barW*float64(si), yOf(share), barW-1, float64(innerH)*share, color,
				html.EscapeString(s.name), float64(i)/10, float64(i+1)/10, c)
		}
		legend(b, si, fmt.Sprintf("%s (n=%d compared runs)", s.name, n), color, false)
	}
	b.WriteString("</svg>\n")
}

// failureCell is a failed run's category and message, escaped, the
// message cut at maxFailureRunes.
func failureCell(f *RunFailure) string {
	if f == nil {
		return ""
	}
	msg := []rune(f.Message)
	cut := ""
	if len(msg) > maxFailureRunes {
		msg, cut = msg[:maxFailureRunes], "…"
	}
	return "<b>" + html.EscapeString(f.Category) + "</b>: " + html.EscapeString(string(msg)) + cut
}

const maxFailureRunes = 600

func pctCI(v *float64, ci *Interval) string {
	if v == nil || ci == nil {
		return pct(v)
	}
	return fmt.Sprintf("%s (%.0f–%.0f%%)", pct(v), ci.Low*100, ci.High*100)
}
