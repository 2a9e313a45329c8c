package opencode

import (
	"strconv"
	"strings"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	"github.com/pvisor/pvisor/trajectory/internal/linediff"
)

// OpenCode's edit, write and apply_patch tools describe a change with the
// `diff` npm package: diffLines (linediff.Lines) and createTwoFilesPatch
// with 4 lines of context, then strip the indentation common to every
// changed and context line. The result only appears in state.metadata, but
// a rebuilt session should carry the diff the agent would have stored.

type hunk struct {
	oldStart, oldLines, newStart, newLines int
	lines                                  []string
}

// twoFilesPatch is createTwoFilesPatch(name, name, old, new) with no
// headers, followed by OpenCode's trimDiff.
func twoFilesPatch(name, oldText, newText string) string {
	const context = 4
	cs := append(linediff.Lines(oldText, newText), linediff.Part{})
	prefixed := func(p string, ls []string) []string {
		out := make([]string, len(ls))
		for i, l := range ls {
			out[i] = p + l
		}
		return out
	}
	var hunks []hunk
	oldStart, newStart := 0, 0
	oldLine, newLine := 1, 1
	var cur []string
	for i, c := range cs {
		if c.Added || c.Removed {
			if oldStart == 0 {
				oldStart, newStart = oldLine, newLine
				if i > 0 {
					prev := cs[i-1].Lines
					if len(prev) > context {
						prev = prev[len(prev)-context:]
					}
					cur = prefixed(" ", prev)
					oldStart -= len(cur)
					newStart -= len(cur)
				}
			}
			p := "-"
			if c.Added {
				p = "+"
			}
			cur = append(cur, prefixed(p, c.Lines)...)
			if c.Added {
				newLine += len(c.Lines)
			} else {
				oldLine += len(c.Lines)
			}
			continue
		}
		if oldStart != 0 {
			if len(c.Lines) <= context*2 && i < len(cs)-2 {
				cur = append(cur, prefixed(" ", c.Lines)...)
			} else {
				n := min(len(c.Lines), context)
				cur = append(cur, prefixed(" ", c.Lines[:n])...)
				hunks = append(hunks, hunk{oldStart: oldStart, oldLines: oldLine - oldStart + n,
					newStart: newStart, newLines: newLine - newStart + n, lines: cur})
				oldStart, newStart, cur = 0, 0, nil
			}
		}
		oldLine += len(c.Lines)
		newLine += len(c.Lines)
	}
	var sb strings.Builder
	sb.WriteString("Index: " + name + "\n")
	sb.WriteString("===================================================================\n")
	sb.WriteString("--- " + name + "\n+++ " + name + "\n")
	for _, h := range hunks {
		if h.oldLines == 0 {
			h.oldStart--
		}
		if h.newLines == 0 {
			h.newStart--
		}
		sb.WriteString("@@ -" + strconv.Itoa(h.oldStart) + "," + strconv.Itoa(h.oldLines) +
			" +" + strconv.Itoa(h.newStart) + "," + strconv.Itoa(h.newLines) + " @@\n")
		for _, l := range h.lines {
			if strings.HasSuffix(l, "\n") {
				sb.WriteString(l)
				continue
			}
			sb.WriteString(l + "\n\\ No newline at end of file\n")
		}
	}
	return trimDiff(sb.String())
}

// trimDiff removes the indentation shared by every changed and context line.
func trimDiff(diff string) string {
	lines := strings.Split(diff, "\n")
	isBody := func(l string) bool {
		return (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") || strings.HasPrefix(l, " ")) &&
			!strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++")
	}
	minIndent := -1
	any := false
	for _, l := range lines {
		if !isBody(l) {
			continue
		}
		any = true
		body := l[1:]
		if jsstr.Trim(body) == "" {
			continue
		}
		n := len(body) - len(strings.TrimLeftFunc(body, jsstr.IsSpace))
		if minIndent < 0 || n < minIndent {
			minIndent = n
		}
	}
	if !any || minIndent <= 0 {
		return diff
	}
	for i, l := range lines {
		if isBody(l) {
			body := l[1:]
			if len(body) >= minIndent {
				body = body[minIndent:]
			} else {
				body = ""
			}
			lines[i] = l[:1] + body
		}
	}
	return strings.Join(lines, "\n")
}
