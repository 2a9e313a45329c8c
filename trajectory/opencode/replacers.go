package opencode

import (
	"math"
	"regexp"
	"strings"
	"sync"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// The edit tool's matchers, tried in this order. Each proposes candidate
// spans of the content for oldString; replaceText keeps the first candidate
// that occurs in the content exactly once. They reproduce OpenCode's
// behaviour: exact text, then lines equal after trimming, a block whose
// first and last lines anchor it, whitespace-normalised text, flexible
// indentation, unescaped text, trimmed boundaries, surrounding context,
// and finally every exact occurrence (for replaceAll).
type matcher func(content, find string, yield func(string) bool)

var matchers = []matcher{
	matchExact, matchLineTrimmed, matchBlockAnchor, matchWhitespace,
	matchIndentation, matchEscapes, matchTrimmedBoundary, matchContext, matchEvery,
}

const anchorThreshold = 0.65

func matchExact(_, find string, yield func(string) bool) { yield(find) }

// lineSpan returns lines[from..from+n) of content as it appears there.
func lineSpan(lines []string, from, n int) string {
	return strings.Join(lines[from:from+n], "\n")
}

func dropTrailingEmpty(ls []string) []string {
	if len(ls) > 0 && ls[len(ls)-1] == "" {
		return ls[:len(ls)-1]
	}
	return ls
}

func matchLineTrimmed(content, find string, yield func(string) bool) {
	lines := strings.Split(content, "\n")
	want := dropTrailingEmpty(strings.Split(find, "\n"))
	for i := 0; i+len(want) <= len(lines); i++ {
		ok := true
		for j := range want {
			if jsstr.Trim(lines[i+j]) != jsstr.Trim(want[j]) {
				ok = false
				break
			}
		}
		if ok && !yield(lineSpan(lines, i, len(want))) {
			return
		}
	}
}

func matchBlockAnchor(content, find string, yield func(string) bool) {
	lines := strings.Split(content, "\n")
	want := strings.Split(find, "\n")
	if len(want) < 3 {
		return
	}
	want = dropTrailingEmpty(want)
	first, last := jsstr.Trim(want[0]), jsstr.Trim(want[len(want)-1])
	size := len(want)
	slack := max(1, int(math.Floor(float64(size)*0.25)))
	type cand struct{ start, end int }
	var cands []cand
	for a := range lines {
		if jsstr.Trim(lines[a]) != first {
			continue
		}
		for g := a + 2; g < len(lines); g++ {
			if jsstr.Trim(lines[g]) == last {
				if n := g - a + 1; abs(n-size) <= slack {
					cands = append(cands, cand{a, g})
				}
				break
			}
		}
	}
	if len(cands) == 0 {
		return
	}
	similarity := func(c cand, early bool) float64 {
		n := c.end - c.start + 1
		div := min(size-2, n-2)
		if div <= 0 {
			return 1
		}
		sim := 0.0
		for k := 1; k < size-1 && k < n-1; k++ {
			x, y := jsstr.Trim(lines[c.start+k]), jsstr.Trim(want[k])
			m := max(jsstr.Len(x), jsstr.Len(y))
			if m == 0 {
				continue
			}
			if early {
				sim += (1 - float64(levenshtein(x, y))/float64(m)) / float64(div)
				if sim >= anchorThreshold {
					break
				}
			} else {
				sim += 1 - float64(levenshtein(x, y))/float64(m)
			}
		}
		if !early {
			sim /= float64(div)
		}
		return sim
	}
	if len(cands) == 1 {
		c := cands[0]
		if similarity(c, true) >= anchorThreshold {
			yield(lineSpan(lines, c.start, c.end-c.start+1))
		}
		return
	}
	best, bestSim := -1, -1.0
	for i, c := range cands {
		if sim := similarity(c, false); sim > bestSim {
			best, bestSim = i, sim
		}
	}
	if bestSim >= anchorThreshold && best >= 0 {
		c := cands[best]
		yield(lineSpan(lines, c.start, c.end-c.start+1))
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// levenshtein works on UTF-16 code units, as the JavaScript does.
func levenshtein(a, b string) int {
	x, y := jsstr.UTF16Units(a), jsstr.UTF16Units(b)
	if len(x) == 0 || len(y) == 0 {
		return max(len(x), len(y))
	}
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(y)]
}

// jsSpace is JavaScript's \s.
const jsSpace = `[\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]`

var (
	spaceRun     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(jsSpace + `+`) })
	leadingSpace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^` + jsSpace + `*`) })
)

func collapseSpace(s string) string { return jsstr.Trim(spaceRun().ReplaceAllString(s, " ")) }

func matchWhitespace(content, find string, yield func(string) bool) {
	want := collapseSpace(find)
	lines := strings.Split(content, "\n")
	for _, l := range lines {
		cl := collapseSpace(l)
		if cl == want {
			if !yield(l) {
				return
			}
			continue
		}
		if !strings.Contains(cl, want) {
			continue
		}
		words := spaceRun().Split(jsstr.Trim(find), -1)
		if len(words) == 0 {
			continue
		}
		for i, w := range words {
			words[i] = regexp.QuoteMeta(w)
		}
		re, err := regexp.Compile(strings.Join(words, jsSpace+`+`))
		if err != nil {
			continue
		}
		if m := re.FindString(l); m != "" || re.MatchString(l) {
			if !yield(m) {
				return
			}
		}
	}
	findLines := strings.Split(find, "\n")
	if len(findLines) > 1 {
		for i := 0; i+len(findLines) <= len(lines); i++ {
			block := lineSpan(lines, i, len(findLines))
			if collapseSpace(block) == want && !yield(block) {
				return
			}
		}
	}
}

// dedent removes the smallest indentation of the non-blank lines.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	minIndent := -1
	for _, l := range lines {
		if jsstr.Trim(l) == "" {
			continue
		}
		n := len(leadingSpace().FindString(l))
		if minIndent < 0 || n < minIndent {
			minIndent = n
		}
	}
	if minIndent < 0 {
		return s
	}
	for i, l := range lines {
		if jsstr.Trim(l) != "" {
			lines[i] = l[min(minIndent, len(l)):]
		}
	}
	return strings.Join(lines, "\n")
}

func matchIndentation(content, find string, yield func(string) bool) {
	want := dedent(find)
	lines := strings.Split(content, "\n")
	n := len(strings.Split(find, "\n"))
	for i := 0; i+n <= len(lines); i++ {
		block := lineSpan(lines, i, n)
		if dedent(block) == want && !yield(block) {
			return
		}
	}
}

var escapeSeq = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("\\\\(n|t|r|'|\"|`|\\\\|\n|\\$)") })

// unescape turns the escape sequences a model sometimes leaves in
// oldString into the characters they stand for.
func unescape(s string) string {
	return escapeSeq().ReplaceAllStringFunc(s, func(m string) string {
		switch m[1] {
		case 'n':
			return "\n"
		case 't':
			return "\t"
		case 'r':
			return "\r"
		}
		return m[1:]
	})
}

func matchEscapes(content, find string, yield func(string) bool) {
	want := unescape(find)
	if strings.Contains(content, want) && !yield(want) {
		return
	}
	lines := strings.Split(content, "\n")
	n := len(strings.Split(want, "\n"))
	for i := 0; i+n <= len(lines); i++ {
		block := lineSpan(lines, i, n)
		if unescape(block) == want && !yield(block) {
			return
		}
	}
}

func matchTrimmedBoundary(content, find string, yield func(string) bool) {
	t := jsstr.Trim(find)
	if t == find {
		return
	}
	if strings.Contains(content, t) && !yield(t) {
		return
	}
	lines := strings.Split(content, "\n")
	n := len(strings.Split(find, "\n"))
	for i := 0; i+n <= len(lines); i++ {
		block := lineSpan(lines, i, n)
		if jsstr.Trim(block) == t && !yield(block) {
			return
		}
	}
}

func matchContext(content, find string, yield func(string) bool) {
	want := strings.Split(find, "\n")
	if len(want) < 3 {
		return
	}
	want = dropTrailingEmpty(want)
	lines := strings.Split(content, "\n")
	first, last := jsstr.Trim(want[0]), jsstr.Trim(want[len(want)-1])
	for i := range lines {
		if jsstr.Trim(lines[i]) != first {
			continue
		}
		for j := i + 2; j < len(lines); j++ {
			if jsstr.Trim(lines[j]) != last {
				continue
			}
			block := lines[i : j+1]
			if len(block) == len(want) {
				same, nonEmpty := 0, 0
				for k := 1; k < len(block)-1; k++ {
					a, b := jsstr.Trim(block[k]), jsstr.Trim(want[k])
					if a != "" || b != "" {
						nonEmpty++
						if a == b {
							same++
						}
					}
				}
				if nonEmpty == 0 || float64(same)/float64(nonEmpty) >= 0.5 {
					if !yield(strings.Join(block, "\n")) {
						return
					}
				}
			}
			break
		}
	}
}

func matchEvery(content, find string, yield func(string) bool) {
	for pos := 0; ; {
		i := strings.Index(content[pos:], find)
		if i < 0 || !yield(find) {
			return
		}
		pos += i + len(find)
	}
}
