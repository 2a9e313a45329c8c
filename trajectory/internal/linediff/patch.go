package linediff

import (
	"strconv"
	"strings"
)

// Hunk is one hunk of a unified patch: its ranges and its lines, each with
// its " ", "-" or "+" prefix and the line's own newline (a text's last line
// may have none).
type Hunk struct {
	OldStart, OldLines, NewStart, NewLines int
	Lines                                  []string
}

// Hunks is the "diff" npm package's structuredPatch of oldText and newText
// with context lines around each change: adjacent changes closer than
// 2×context lines share a hunk.
func Hunks(oldText, newText string, context int) []Hunk {
	parts := append(Lines(oldText, newText), Part{}) // an empty run closes the last hunk
	prefixed := func(p string, ls []string) []string {
		out := make([]string, len(ls))
		for i, l := range ls {
			out[i] = p + l
		}
		return out
	}
	var hunks []Hunk
	var cur []string
	oldStart, newStart, oldLine, newLine := 0, 0, 1, 1
	for i, p := range parts {
		if p.Added || p.Removed {
			if oldStart == 0 {
				oldStart, newStart = oldLine, newLine
				if i > 0 {
					prev := parts[i-1].Lines
					cur = prefixed(" ", prev[max(0, len(prev)-context):])
					oldStart -= len(cur)
					newStart -= len(cur)
				}
			}
			if p.Added {
				cur = append(cur, prefixed("+", p.Lines)...)
				newLine += len(p.Lines)
			} else {
				cur = append(cur, prefixed("-", p.Lines)...)
				oldLine += len(p.Lines)
			}
			continue
		}
		if oldStart != 0 {
			if len(p.Lines) <= 2*context && i < len(parts)-2 {
				cur = append(cur, prefixed(" ", p.Lines)...)
			} else {
				n := min(len(p.Lines), context)
				cur = append(cur, prefixed(" ", p.Lines[:n])...)
				hunks = append(hunks, Hunk{oldStart, oldLine - oldStart + n, newStart, newLine - newStart + n, cur})
				oldStart, newStart, cur = 0, 0, nil
			}
		}
		oldLine += len(p.Lines)
		newLine += len(p.Lines)
	}
	return hunks
}

// FormatPatch prints hunks as the "diff" package's formatPatch does for
// one file name: "Index:" and a "=" rule first when index is set, then
// "--- name", "+++ name", every hunk "@@ -a,b +c,d @@" (an empty range
// starts one line earlier), "\ No newline at end of file" after a last line
// without one, and a final newline.
func FormatPatch(name string, hunks []Hunk, index bool) string {
	var b strings.Builder
	if index {
		b.WriteString("Index: " + name + "\n")
		b.WriteString("===================================================================\n")
	}
	b.WriteString("--- " + name + "\n+++ " + name + "\n")
	for _, h := range hunks {
		if h.OldLines == 0 {
			h.OldStart--
		}
		if h.NewLines == 0 {
			h.NewStart--
		}
		b.WriteString("@@ -" + strconv.Itoa(h.OldStart) + "," + strconv.Itoa(h.OldLines) +
			" +" + strconv.Itoa(h.NewStart) + "," + strconv.Itoa(h.NewLines) + " @@\n")
		for _, l := range h.Lines {
			if strings.HasSuffix(l, "\n") {
				b.WriteString(l)
			} else {
				b.WriteString(l + "\n\\ No newline at end of file\n")
			}
		}
	}
	return b.String()
}
