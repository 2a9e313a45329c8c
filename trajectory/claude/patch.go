package claude

import (
	"strings"

	"github.com/pvisor/pvisor/trajectory/internal/linediff"
)

// hunk is one entry of structuredPatch in Write/Edit toolUseResults: the
// jsdiff structuredPatch shape with three lines of context.
type hunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
}

const (
	patchContext = 3
	noNewline    = "\\ No newline at end of file"
	maxEditCost  = 4000 // larger differences are reported as one replaced block
)

// change is a run of equal, removed or added lines.
type change struct {
	kind  byte // ' ', '-', '+'
	lines []string
}

// structuredPatch diffs old and new line by line and groups the changes
// into hunks as jsdiff's structuredPatch does.
func structuredPatch(old, new string) []hunk {
	hunks := []hunk{}
	if old == new {
		return hunks
	}
	diff := append(diffLines(old, new), change{kind: ' '})
	var cur []string
	oldStart, newStart := 0, 0
	oldLine, newLine := 1, 1
	for i, c := range diff {
		if c.kind != ' ' {
			if oldStart == 0 {
				oldStart, newStart = oldLine, newLine
				if i > 0 {
					prev := diff[i-1].lines
					ctx := prev[max(0, len(prev)-patchContext):]
					cur = prefixed(' ', ctx)
					oldStart -= len(ctx)
					newStart -= len(ctx)
				}
			}
			cur = append(cur, prefixed(c.kind, c.lines)...)
			if c.kind == '+' {
				newLine += len(c.lines)
			} else {
				oldLine += len(c.lines)
			}
			continue
		}
		if oldStart != 0 {
			if len(c.lines) <= 2*patchContext && i < len(diff)-2 {
				cur = append(cur, prefixed(' ', c.lines)...)
			} else {
				n := min(len(c.lines), patchContext)
				cur = append(cur, prefixed(' ', c.lines[:n])...)
				h := hunk{OldStart: oldStart, OldLines: oldLine - oldStart + n, NewStart: newStart, NewLines: newLine - newStart + n}
				if i >= len(diff)-2 && len(c.lines) <= patchContext {
					oldNL, newNL := strings.HasSuffix(old, "\n"), strings.HasSuffix(new, "\n")
					noNLBeforeAdds := len(c.lines) == 0 && len(cur) > h.OldLines
					if !oldNL && noNLBeforeAdds && old != "" {
						cur = append(cur[:h.OldLines], append([]string{noNewline}, cur[h.OldLines:]...)...)
					}
					if (!oldNL && !noNLBeforeAdds) || !newNL {
						cur = append(cur, noNewline)
					}
				}
				h.Lines = cur
				hunks = append(hunks, h)
				oldStart, newStart, cur = 0, 0, nil
			}
		}
		oldLine += len(c.lines)
		newLine += len(c.lines)
	}
	return hunks
}

func prefixed(p byte, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(p) + l
	}
	return out
}

// diffLines returns the line changes from a to b: a shortest edit script
// (Myers), with each run of removals before the additions it pairs with.
// It tokenizes as jsdiff does but is not linediff.Lines: it trims the
// common prefix and suffix, caps the edit cost and backtracks classic Myers,
// so among equally short diffs it may pick another one; moving it onto
// linediff would change the hunks rebuilt Claude sessions carry.
func diffLines(a, b string) []change {
	x, y := linediff.Tokens(a), linediff.Tokens(b)
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	ops := myers(x[pre:len(x)-suf], y[pre:len(y)-suf])
	var out []change
	add := func(kind byte, tok string) {
		line := strings.TrimSuffix(tok, "\n")
		if n := len(out); n > 0 && out[n-1].kind == kind {
			out[n-1].lines = append(out[n-1].lines, line)
			return
		}
		out = append(out, change{kind: kind, lines: []string{line}})
	}
	for _, t := range x[:pre] {
		add(' ', t)
	}
	xi, yi := pre, pre
	for _, op := range ops {
		switch op {
		case ' ':
			add(' ', x[xi])
			xi++
			yi++
		case '-':
			add('-', x[xi])
			xi++
		case '+':
			add('+', y[yi])
			yi++
		}
	}
	for _, t := range x[len(x)-suf:] {
		add(' ', t)
	}
	// Put removals before the additions they sit next to.
	for i := 1; i < len(out); i++ {
		if out[i].kind == '-' && out[i-1].kind == '+' {
			out[i], out[i-1] = out[i-1], out[i]
		}
	}
	return mergeRuns(out)
}

func mergeRuns(in []change) []change {
	var out []change
	for _, c := range in {
		if n := len(out); n > 0 && out[n-1].kind == c.kind {
			out[n-1].lines = append(out[n-1].lines, c.lines...)
			continue
		}
		out = append(out, c)
	}
	return out
}

// myers returns an edit script (' ', '-', '+') turning x into y.
func myers(x, y []string) []byte {
	n, m := len(x), len(y)
	if n == 0 || m == 0 || n+m > 2*maxEditCost*8 {
		return replaceAll(n, m)
	}
	maxD := min(n+m, maxEditCost)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		snap := make([]int, len(v))
		copy(snap, v)
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var px int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				px = v[off+k+1] // down: an insertion
			} else {
				px = v[off+k-1] + 1 // right: a deletion
			}
			py := px - k
			for px < n && py < m && x[px] == y[py] {
				px++
				py++
			}
			v[off+k] = px
			if px >= n && py >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return replaceAll(n, m)
	}
	var ops []byte
	px, py := n, m
	for d := found; d > 0; d-- {
		vd := trace[d]
		k := px - py
		var prevK int
		if k == -d || (k != d && vd[off+k-1] < vd[off+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := vd[off+prevK]
		prevY := prevX - prevK
		for px > prevX && py > prevY {
			ops = append(ops, ' ')
			px--
			py--
		}
		if px == prevX {
			ops = append(ops, '+')
		} else {
			ops = append(ops, '-')
		}
		px, py = prevX, prevY
	}
	for px > 0 && py > 0 {
		ops = append(ops, ' ')
		px--
		py--
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops
}

func replaceAll(n, m int) []byte {
	ops := make([]byte, 0, n+m)
	for range n {
		ops = append(ops, '-')
	}
	for range m {
		ops = append(ops, '+')
	}
	return ops
}
