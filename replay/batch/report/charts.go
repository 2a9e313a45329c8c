package report

import (
	"bytes"
	"fmt"
	"html"
	"sort"
)

// Small multiples: one panel per agent × upstream series, all on the same
// axes, so series with equal values cannot hide each other. Boundaries are
// categories (evenly spaced, never joined by a line: after step 1 and
// after step 3 say nothing about step 2, and a gap between them is marked).
const (
	panelW                   = 262
	pLeft, pRight, pTop      = 38, 10, 34
	pInnerW, pInnerH         = panelW - pLeft - pRight, 120
	panelH                   = pTop + pInnerH + 40
	dodge                    = 7 // px between the two marks of one boundary
	colorExact, colorNorm    = "#1b9e77", "#e6ab02"
	colorDifferent, colorGap = "#e7298a", "#999"
)

// boundaries is every boundary any series has, in order: the panels share
// their x axis.
func boundaries(ss []series) []int {
	seen := map[int]bool{}
	var out []int
	for _, s := range ss {
		for _, g := range s.groups {
			if !seen[g.AfterStep] {
				seen[g.AfterStep] = true
				out = append(out, g.AfterStep)
			}
		}
	}
	sort.Ints(out)
	return out
}

// xOf places the i-th of n categories.
func xOf(i, n int) float64 {
	return float64(pLeft) + float64(pInnerW)*(float64(i)+0.5)/float64(n)
}

func pY(v float64) float64 { return float64(pTop) + float64(pInnerH)*(1-v) }

// panel opens one small multiple: title in the series colour, the 0–100%
// grid, the boundary ticks and a break mark between boundaries that are
// not consecutive.
func panel(b *bytes.Buffer, title, color string, steps []int) {
	fmt.Fprintf(b, `<svg class="panel" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n",
		panelW, panelH, panelW, panelH, html.EscapeString(title))
	fmt.Fprintf(b, `<rect x="%d" y="8" width="10" height="10" fill="%s"/><text x="%d" y="17" style="font-weight:bold">%s</text>`+"\n",
		pLeft, color, pLeft+14, html.EscapeString(title))
	for i := 0; i <= 4; i++ {
		y := pY(float64(i) / 4)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%d%%</text>`+"\n",
			pLeft, y, pLeft+pInnerW, y, pLeft-4, y+4, i*25)
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", pLeft, pTop+pInnerH, pLeft+pInnerW, pTop+pInnerH)
	for i, k := range steps {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", xOf(i, len(steps)), pTop+pInnerH+13, k)
		if i > 0 && k != steps[i-1]+1 {
			fmt.Fprintf(b, `<text class="gap" x="%.1f" y="%d" text-anchor="middle" fill="%s">⋯<title>no boundary between %d and %d in this study</title></text>`+"\n",
				(xOf(i-1, len(steps))+xOf(i, len(steps)))/2, pTop+pInnerH+13, colorGap, steps[i-1], k)
		}
	}
	if len(steps) == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">no data</text>`+"\n", pLeft+pInnerW/2, pTop+pInnerH/2)
	}
}

// figure wraps the panels of one plot with its title and key.
func figure(b *bytes.Buffer, id, title, key string, ss []series, draw func(b *bytes.Buffer, s series, color string, steps []int)) {
	steps := boundaries(ss)
	fmt.Fprintf(b, "<figure id=\"%s\" class=\"plot\"><figcaption><b>%s</b> — after step (x), one panel per agent · CLI release · upstream; %s</figcaption>\n",
		id, html.EscapeString(title), key)
	if len(ss) == 0 {
		panel(b, "no runs", palette[0], nil)
		b.WriteString("</svg>\n")
	}
	for i, s := range ss {
		color := palette[i%len(palette)]
		panel(b, s.name, color, steps)
		draw(b, s, color, steps)
		b.WriteString("</svg>\n")
	}
	b.WriteString("</figure>\n")
}

// agreementFigure: per boundary the tool-name agreement (circle) and the
// exact-tool agreement (square) side by side, each with its Wilson 95%
// interval and n, the number of compared runs.
func agreementFigure(b *bytes.Buffer, ss []series) {
	key := `● tool names equal, ■ exact tool (names, count, arguments); bars are Wilson 95% intervals; n = compared runs`
	figure(b, "plot-agreement", "Next-action agreement", key, ss, func(b *bytes.Buffer, s series, color string, steps []int) {
		for _, g := range s.groups {
			if g.ToolNameAgreement == nil {
				continue
			}
			x := xOf(indexOf(steps, g.AfterStep), len(steps))
			mark(b, "circle", x-dodge/2, *g.ToolNameAgreement, g.ToolNameAgreementCI, color,
				fmt.Sprintf("%s after step %d: tool names equal in %s", s.name, g.AfterStep, shareText(*g.ToolNameAgreement, g.ToolNameAgreementCI, g.Compared, "runs")))
			mark(b, "square", x+dodge/2, *g.ExactToolAgreement, g.ExactToolAgreementCI, color,
				fmt.Sprintf("%s after step %d: exact tool in %s", s.name, g.AfterStep, shareText(*g.ExactToolAgreement, g.ExactToolAgreementCI, g.Compared, "runs")))
			nLabel(b, x, g.Compared)
		}
	})
}

// driftFigure: per boundary one bar stacking the replayed calls whose
// observation was exact, equal once run-to-run fields are masked, and
// different; n = replayed calls.
func driftFigure(b *bytes.Buffer, ss []series) {
	key := fmt.Sprintf(`<span style="color:%s">■</span> exact, <span style="color:%s">■</span> equal once normalized, <span style="color:%s">■</span> different; n = replayed calls`,
		colorExact, colorNorm, colorDifferent)
	figure(b, "plot-drift", "Observation drift", key, ss, func(b *bytes.Buffer, s series, _ string, steps []int) {
		w := float64(pInnerW) / float64(max(len(steps), 1)) * 0.5
		for _, g := range s.groups {
			d := g.DriftShares
			if d == nil {
				continue
			}
			x := xOf(indexOf(steps, g.AfterStep), len(steps)) - w/2
			bottom := 1.0
			for _, part := range []struct {
				name, color string
				share       float64
				ci          Interval
			}{{"exact", colorExact, d.Exact, d.ExactCI}, {"equal once normalized", colorNorm, d.NormalizedExact, d.NormalizedExactCI},
				{"different", colorDifferent, d.Different, d.DifferentCI}} {
				if part.share <= 0 {
					continue
				}
				top := bottom - part.share
				fmt.Fprintf(b, `<rect class="stack" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s after step %d: %s %s</title></rect>`+"\n",
					x, pY(bottom), w, pY(top)-pY(bottom), part.color, html.EscapeString(s.name), g.AfterStep, part.name,
					shareText(part.share, &part.ci, g.Observations.Calls, "calls"))
				bottom = top
			}
			nLabel(b, x+w/2, g.Observations.Calls)
		}
	})
}

// mark draws a point with its interval.
func mark(b *bytes.Buffer, shape string, x, v float64, ci *Interval, color, title string) {
	if ci != nil {
		fmt.Fprintf(b, `<line class="ci" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"/>`+"\n", x, pY(ci.Low), x, pY(ci.High), color)
		for _, y := range []float64{ci.Low, ci.High} {
			fmt.Fprintf(b, `<line class="ci" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x-2.5, pY(y), x+2.5, pY(y), color)
		}
	}
	t := html.EscapeString(title)
	if shape == "square" {
		fmt.Fprintf(b, `<rect class="point" x="%.1f" y="%.1f" width="7" height="7" fill="%s"><title>%s</title></rect>`+"\n", x-3.5, pY(v)-3.5, color, t)
		return
	}
	fmt.Fprintf(b, `<circle class="point" cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s</title></circle>`+"\n", x, pY(v), color, t)
}

func nLabel(b *bytes.Buffer, x float64, n int) {
	fmt.Fprintf(b, `<text class="n" x="%.1f" y="%d" text-anchor="middle" fill="#666">n=%d</text>`+"\n", x, pTop+pInnerH+26, n)
}

// shareText is "67% of 3 runs (95% CI 21%–94%)".
func shareText(v float64, ci *Interval, n int, of string) string {
	s := fmt.Sprintf("%.0f%% of %d %s", v*100, n, of)
	if ci != nil {
		s += fmt.Sprintf(" (95%% CI %.0f%%–%.0f%%)", ci.Low*100, ci.High*100)
	}
	return s
}

func indexOf(xs []int, x int) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return 0
}
