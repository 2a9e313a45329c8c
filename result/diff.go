package result

import (
	"fmt"
	"strings"
)

// UnifiedDiff returns a unified diff of a and b line by line, with n lines
// of context, or "" when they are equal. Labels name the two sides.
func UnifiedDiff(labelA, labelB, a, b string, n int) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops := diffLines(al, bl)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", labelA, labelB)
	for _, h := range hunks(ops, n) {
		writeHunk(&sb, h, al, bl)
	}
	return sb.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

type opKind byte

const (
	opEq  opKind = ' '
	opDel opKind = '-'
	opIns opKind = '+'
)

type edit struct {
	kind opKind
	a, b int // line indexes in a and b (the one that applies)
}

// diffLines is Myers' O(ND) shortest edit script.
func diffLines(a, b []string) []edit {
	n, m := len(a), len(b)
	max := n + m
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	for d := 0; d <= max; d++ {
		snapshot := make([]int, len(v))
		copy(snapshot, v)
		trace = append(trace, snapshot)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, off, d)
			}
		}
	}
	return nil
}

func backtrack(trace [][]int, a, b []string, off, d int) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for ; d > 0; d-- {
		v := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := v[off+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, edit{opEq, x, y})
		}
		if x == prevX {
			y--
			rev = append(rev, edit{opIns, x, y})
		} else {
			x--
			rev = append(rev, edit{opDel, x, y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{opEq, x, y})
	}
	out := make([]edit, len(rev))
	for i := range rev {
		out[i] = rev[len(rev)-1-i]
	}
	return out
}

// hunks groups edits into ranges with n lines of context around changes.
func hunks(ops []edit, n int) [][]edit {
	var out [][]edit
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == opEq {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-n)
		end := i
		for end < len(ops) {
			if ops[end].kind != opEq {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == opEq {
				run++
			}
			if run == len(ops) || run-end > 2*n {
				end = min(len(ops), end+n)
				break
			}
			end = run
		}
		out = append(out, ops[start:end])
		i = end
	}
	return out
}

func writeHunk(sb *strings.Builder, h []edit, a, b []string) {
	aStart, bStart, aLen, bLen := -1, -1, 0, 0
	for _, e := range h {
		switch e.kind {
		case opEq:
			if aStart < 0 {
				aStart = e.a
			}
			if bStart < 0 {
				bStart = e.b
			}
			aLen++
			bLen++
		case opDel:
			if aStart < 0 {
				aStart = e.a
			}
			if bStart < 0 {
				bStart = e.b
			}
			aLen++
		case opIns:
			if aStart < 0 {
				aStart = e.a
			}
			if bStart < 0 {
				bStart = e.b
			}
			bLen++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
	for _, e := range h {
		line := ""
		switch e.kind {
		case opEq, opDel:
			line = a[e.a]
		case opIns:
			line = b[e.b]
		}
		sb.WriteByte(byte(e.kind))
		sb.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

func hunkRange(start, length int) string {
	if length == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if length == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, length)
}
