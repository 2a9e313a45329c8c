package pi

import (
	"strconv"
	"strings"

	"github.com/pvisor/pvisor/trajectory/internal/linediff"
)

// unifiedPatch is the standard unified patch pi (≥ 0.75.5) puts in an edit
// result's details.patch: the "diff" npm package's structured patch of the
// whole file with 4 lines of context, printed with file headers only
// ("--- path", "+++ path", no Index line), every hunk "@@ -a,b +c,d @@",
// "\ No newline at end of file" after a last line without one, and a
// final newline. (1.x diffs windows around each replacement and joins
// their hunks, which equals this except where runs of repeated lines could
// align differently.)
func unifiedPatch(path, oldText, newText string) string {
	const context = 4
	type hunk struct {
		oldStart, oldLines, newStart, newLines int
		lines                                  []string
	}
	parts := linediff.Lines(oldText, newText)
	parts = append(parts, linediff.Part{}) // an empty run closes the last hunk
	var hunks []hunk
	var cur []string
	oldStart, newStart, oldLine, newLine := 0, 0, 1, 1
	for i, p := range parts {
		if p.Added || p.Removed {
			if oldStart == 0 {
				oldStart, newStart = oldLine, newLine
				if i > 0 {
					prev := parts[i-1].Lines
					prev = prev[max(0, len(prev)-context):]
					cur = nil
					for _, l := range prev {
						cur = append(cur, " "+l)
					}
					oldStart -= len(prev)
					newStart -= len(prev)
				}
			}
			sign := "-"
			if p.Added {
				sign = "+"
			}
			for _, l := range p.Lines {
				cur = append(cur, sign+l)
			}
			if p.Added {
				newLine += len(p.Lines)
			} else {
				oldLine += len(p.Lines)
			}
			continue
		}
		if oldStart != 0 {
			if len(p.Lines) <= 2*context && i < len(parts)-2 {
				for _, l := range p.Lines {
					cur = append(cur, " "+l)
				}
			} else {
				n := min(len(p.Lines), context)
				for _, l := range p.Lines[:n] {
					cur = append(cur, " "+l)
				}
				hunks = append(hunks, hunk{oldStart, oldLine - oldStart + n, newStart, newLine - newStart + n, cur})
				oldStart, newStart, cur = 0, 0, nil
			}
		}
		oldLine += len(p.Lines)
		newLine += len(p.Lines)
	}
	var b strings.Builder
	b.WriteString("--- " + path + "\n+++ " + path + "\n")
	for _, h := range hunks {
		if h.oldLines == 0 {
			h.oldStart--
		}
		if h.newLines == 0 {
			h.newStart--
		}
		b.WriteString("@@ -" + strconv.Itoa(h.oldStart) + "," + strconv.Itoa(h.oldLines) +
			" +" + strconv.Itoa(h.newStart) + "," + strconv.Itoa(h.newLines) + " @@\n")
		for _, l := range h.lines {
			if t, ok := strings.CutSuffix(l, "\n"); ok {
				b.WriteString(t + "\n")
			} else {
				b.WriteString(l + "\n\\ No newline at end of file\n")
			}
		}
	}
	return b.String()
}
