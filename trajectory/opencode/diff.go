package opencode

import (
	"strconv"
	"strings"
)

// OpenCode's edit, write and apply_patch tools describe a change with the
// `diff` npm package: diffLines (Myers, with that package's choice between
// equally short paths) and createTwoFilesPatch with 4 lines of context, then
// strip the indentation common to every changed and context line. The
// result only appears in state.metadata, but a rebuilt session should carry
// the diff the agent would have stored.

// lineTokens splits text into lines that keep their "\n" or "\r\n".
func lineTokens(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// component is a run of tokens that were kept, added or removed.
type component struct {
	count          int
	added, removed bool
	prev           *component
	lines          []string
}

type diffPath struct {
	oldPos int
	last   *component
}

// diffLines returns the change components turning oldS into newS.
func diffLines(oldText, newText string) []*component {
	oldS, newS := lineTokens(oldText), lineTokens(newText)
	oldLen, newLen := len(oldS), len(newS)
	extract := func(p *diffPath, diagonal int) int {
		oldPos := p.oldPos
		newPos := oldPos - diagonal
		n := 0
		for newPos+1 < newLen && oldPos+1 < oldLen && oldS[oldPos+1] == newS[newPos+1] {
			newPos++
			oldPos++
			n++
		}
		if n > 0 {
			p.last = &component{count: n, prev: p.last}
		}
		p.oldPos = oldPos
		return newPos
	}
	add := func(p *diffPath, added, removed bool, inc int) *diffPath {
		l := p.last
		if l != nil && l.added == added && l.removed == removed {
			return &diffPath{oldPos: p.oldPos + inc, last: &component{count: l.count + 1, added: added, removed: removed, prev: l.prev}}
		}
		return &diffPath{oldPos: p.oldPos + inc, last: &component{count: 1, added: added, removed: removed, prev: l}}
	}
	build := func(last *component) []*component {
		var cs []*component
		for c := last; c != nil; c = c.prev {
			cs = append(cs, c)
		}
		for i, j := 0, len(cs)-1; i < j; i, j = i+1, j-1 {
			cs[i], cs[j] = cs[j], cs[i]
		}
		oldPos, newPos := 0, 0
		for _, c := range cs {
			if c.removed {
				c.lines = oldS[oldPos : oldPos+c.count]
				oldPos += c.count
				continue
			}
			c.lines = newS[newPos : newPos+c.count]
			newPos += c.count
			if !c.added {
				oldPos += c.count
			}
		}
		return cs
	}
	best := map[int]*diffPath{0: {oldPos: -1}}
	newPos := extract(best[0], 0)
	if best[0].oldPos+1 >= oldLen && newPos+1 >= newLen {
		return build(best[0].last)
	}
	const inf = int(^uint(0) >> 1)
	minD, maxD := -inf, inf
	for editLen := 1; editLen <= oldLen+newLen; editLen++ {
		for d := max(minD, -editLen); d <= min(maxD, editLen); d += 2 {
			removePath, addPath := best[d-1], best[d+1]
			if removePath != nil {
				delete(best, d-1)
			}
			canAdd := false
			if addPath != nil {
				np := addPath.oldPos - d
				canAdd = 0 <= np && np < newLen
			}
			canRemove := removePath != nil && removePath.oldPos+1 < oldLen
			if !canAdd && !canRemove {
				delete(best, d)
				continue
			}
			var base *diffPath
			if !canRemove || (canAdd && removePath.oldPos < addPath.oldPos) {
				base = add(addPath, true, false, 0)
			} else {
				base = add(removePath, false, true, 1)
			}
			newPos = extract(base, d)
			if base.oldPos+1 >= oldLen && newPos+1 >= newLen {
				return build(base.last)
			}
			best[d] = base
			if base.oldPos+1 >= oldLen {
				maxD = min(maxD, d-1)
			}
			if newPos+1 >= newLen {
				minD = max(minD, d+1)
			}
		}
	}
	return nil
}

// countChanges sums the added and removed lines, as the tools report them.
func countChanges(oldText, newText string) (additions, deletions int) {
	for _, c := range diffLines(oldText, newText) {
		if c.added {
			additions += c.count
		}
		if c.removed {
			deletions += c.count
		}
	}
	return
}

type hunk struct {
	oldStart, oldLines, newStart, newLines int
	lines                                  []string
}

// twoFilesPatch is createTwoFilesPatch(name, name, old, new) with no
// headers, followed by OpenCode's trimDiff.
func twoFilesPatch(name, oldText, newText string) string {
	const context = 4
	cs := append(diffLines(oldText, newText), &component{})
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
		if c.added || c.removed {
			if oldStart == 0 {
				oldStart, newStart = oldLine, newLine
				if i > 0 {
					prev := cs[i-1].lines
					if len(prev) > context {
						prev = prev[len(prev)-context:]
					}
					cur = prefixed(" ", prev)
					oldStart -= len(cur)
					newStart -= len(cur)
				}
			}
			p := "-"
			if c.added {
				p = "+"
			}
			cur = append(cur, prefixed(p, c.lines)...)
			if c.added {
				newLine += len(c.lines)
			} else {
				oldLine += len(c.lines)
			}
			continue
		}
		if oldStart != 0 {
			if len(c.lines) <= context*2 && i < len(cs)-2 {
				cur = append(cur, prefixed(" ", c.lines)...)
			} else {
				n := min(len(c.lines), context)
				cur = append(cur, prefixed(" ", c.lines[:n])...)
				hunks = append(hunks, hunk{oldStart: oldStart, oldLines: oldLine - oldStart + n,
					newStart: newStart, newLines: newLine - newStart + n, lines: cur})
				oldStart, newStart, cur = 0, 0, nil
			}
		}
		oldLine += len(c.lines)
		newLine += len(c.lines)
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
		if jsTrim(body) == "" {
			continue
		}
		n := len(body) - len(strings.TrimLeftFunc(body, isJSSpace))
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
