package agents

import "strings"

// Closest returns the candidate a mistyped name most likely meant, or ""
// when none is close: the same name once case and '_' are ignored, a
// candidate the name starts (at a '-' boundary, as "claude" starts
// "claude-code"), or one within a small edit distance. A tie between two
// candidates suggests neither.
func Closest(name string, candidates []string) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "-") }
	n := norm(name)
	if n == "" {
		return ""
	}
	best, bestScore, tie := "", 1<<30, false
	for _, c := range candidates {
		cn := norm(c)
		score := -1
		switch {
		case cn == n:
			score = 0
		case strings.HasPrefix(cn, n+"-") || strings.HasPrefix(n, cn+"-"):
			score = 1
		default:
			if d := editDistance(n, cn); d <= max(1, min(len(n), len(cn))/3) {
				score = 1 + d
			}
		}
		switch {
		case score < 0:
		case score < bestScore:
			best, bestScore, tie = c, score, false
		case score == bestScore && c != best:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// Suggest is Closest over the agent names (and their aliases).
func Suggest(name string) string {
	names := Names()
	for _, a := range registry {
		names = append(names, a.Aliases...)
	}
	return Canonical(Closest(name, names))
}

// DidYouMean is "; did you mean X?" for the agent name the mistyped name
// most likely meant, or "".
func DidYouMean(name string) string {
	if s := Suggest(name); s != "" && s != name {
		return "; did you mean " + s + "?"
	}
	return ""
}

// editDistance is the optimal-string-alignment distance of a and b, by
// bytes: insertions, deletions, substitutions and swaps of two neighbours
// ("agnet" is one from "agent").
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
