package opencode

import (
	"strings"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	"github.com/pvisor/pvisor/trajectory/internal/linediff"
)

// OpenCode's edit, write and apply_patch tools describe a change with the
// `diff` npm package: diffLines (linediff.Lines) and createTwoFilesPatch
// with 4 lines of context, then strip the indentation common to every
// changed and context line. The result only appears in state.metadata, but
// a rebuilt session should carry the diff the agent would have stored.

// twoFilesPatch is createTwoFilesPatch(name, name, old, new) with no
// headers, followed by OpenCode's trimDiff.
func twoFilesPatch(name, oldText, newText string) string {
	return trimDiff(linediff.FormatPatch(name, linediff.Hunks(oldText, newText, 4), true))
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
