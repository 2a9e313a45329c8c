// Package linediff is the line diff of the "diff" npm package (jsdiff)
// that OpenCode and pi use to describe an edit: Myers' algorithm with that
// package's tie-breaks, which decide which of several equally short diffs
// an agent shows. The agents render the result differently (a unified
// patch, a numbered listing), so rendering stays in each agent's package.
//
// Claude's structuredPatch (trajectory/claude) shares only Tokens: its
// Myers variant trims the common prefix and suffix and caps the cost, so it
// can choose another of the equally short diffs.
package linediff

import "strings"

// Part is one run of lines that are the same in both texts, only in the
// new text (Added) or only in the old one (Removed).
type Part struct {
	Count          int
	Added, Removed bool
	// Lines are the run's lines, each with its "\n" (or "\r\n") except
	// for a text's last line when the text does not end in a newline.
	Lines []string
}

// Tokens splits text into lines that keep their "\n" (and a "\r" before
// it), as jsdiff's line tokenizer does by default.
func Tokens(s string) []string {
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

// component is a run on one edit path; paths share their tails.
type component struct {
	count          int
	added, removed bool
	prev           *component
}

type path struct {
	oldPos int
	last   *component
}

// Lines is jsdiff's diffLines(oldText, newText): the runs that turn
// oldText into newText, in order. Equal texts give one unchanged run (none
// when both are empty).
func Lines(oldText, newText string) []Part {
	oldT, newT := Tokens(oldText), Tokens(newText)
	oldLen, newLen := len(oldT), len(newT)
	maxEdit := oldLen + newLen
	off := maxEdit + 1
	best := make([]*path, 2*maxEdit+3)
	// extract follows the diagonal while the lines agree.
	extract := func(p *path, diag int) int {
		oldPos := p.oldPos
		newPos := oldPos - diag
		common := 0
		for newPos+1 < newLen && oldPos+1 < oldLen && oldT[oldPos+1] == newT[newPos+1] {
			newPos++
			oldPos++
			common++
		}
		if common > 0 {
			p.last = &component{count: common, prev: p.last}
		}
		p.oldPos = oldPos
		return newPos
	}
	step := func(p *path, added, removed bool, inc int) *path {
		last := p.last
		if last != nil && last.added == added && last.removed == removed {
			return &path{oldPos: p.oldPos + inc,
				last: &component{count: last.count + 1, added: added, removed: removed, prev: last.prev}}
		}
		return &path{oldPos: p.oldPos + inc, last: &component{count: 1, added: added, removed: removed, prev: last}}
	}
	best[off] = &path{oldPos: -1}
	newPos := extract(best[off], 0)
	if best[off].oldPos+1 >= oldLen && newPos+1 >= newLen {
		return parts(best[off].last, oldT, newT)
	}
	minDiag, maxDiag := -maxEdit-1, maxEdit+1
	for editLength := 1; editLength <= maxEdit; editLength++ {
		for d := max(minDiag, -editLength); d <= min(maxDiag, editLength); d += 2 {
			removePath, addPath := best[off+d-1], best[off+d+1]
			if removePath != nil {
				best[off+d-1] = nil // no later diagonal can use it
			}
			canAdd := false
			if addPath != nil {
				np := addPath.oldPos - d
				canAdd = np >= 0 && np < newLen
			}
			canRemove := removePath != nil && removePath.oldPos+1 < oldLen
			if !canAdd && !canRemove {
				best[off+d] = nil
				continue
			}
			// jsdiff's tie-break: prefer the path that got further in the
			// old text, and on a tie the removal.
			var base *path
			if !canRemove || (canAdd && removePath.oldPos < addPath.oldPos) {
				base = step(addPath, true, false, 0)
			} else {
				base = step(removePath, false, true, 1)
			}
			newPos = extract(base, d)
			if base.oldPos+1 >= oldLen && newPos+1 >= newLen {
				return parts(base.last, oldT, newT)
			}
			best[off+d] = base
			if base.oldPos+1 >= oldLen {
				maxDiag = min(maxDiag, d-1)
			}
			if newPos+1 >= newLen {
				minDiag = max(minDiag, d+1)
			}
		}
	}
	return nil // unreachable: maxEdit edits always suffice
}

// parts turns the winning path, kept newest first, into runs in order.
func parts(last *component, oldT, newT []string) []Part {
	var comps []*component
	for c := last; c != nil; c = c.prev {
		comps = append(comps, c)
	}
	out := make([]Part, 0, len(comps))
	oldPos, newPos := 0, 0
	for i := len(comps) - 1; i >= 0; i-- {
		c := comps[i]
		p := Part{Count: c.count, Added: c.added, Removed: c.removed}
		if c.removed {
			p.Lines = oldT[oldPos : oldPos+c.count]
			oldPos += c.count
		} else {
			p.Lines = newT[newPos : newPos+c.count]
			newPos += c.count
			if !c.added {
				oldPos += c.count
			}
		}
		out = append(out, p)
	}
	return out
}

// Changes counts the added and removed lines between two texts, as the
// agents report them next to a diff.
func Changes(oldText, newText string) (additions, deletions int) {
	for _, p := range Lines(oldText, newText) {
		switch {
		case p.Added:
			additions += p.Count
		case p.Removed:
			deletions += p.Count
		}
	}
	return additions, deletions
}
