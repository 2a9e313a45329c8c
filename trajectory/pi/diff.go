package pi

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	"github.com/pvisor/pvisor/trajectory/internal/linediff"
)

// This file holds the edit tool's text semantics: the replacement rules
// (exact match first, then a whitespace/quote/dash-insensitive match), the
// error texts, and the numbered diff pi puts in details.diff, computed with
// linediff.Lines, the "diff" npm package's line diff that pi uses.

// generateDiff is pi's numbered diff with 4 lines of context: "-N old",
// "+N new", " N same" and " ... " for skipped lines; firstChanged is the
// first changed line in the new text (0 when nothing changed).
func generateDiff(oldContent, newContent string) (diff string, firstChanged int) {
	const contextLines = 4
	parts := linediff.Lines(oldContent, newContent)
	var out []string
	width := len(strconv.Itoa(max(strings.Count(oldContent, "\n"), strings.Count(newContent, "\n")) + 1))
	num := func(n int) string { return fmt.Sprintf("%*d", width, n) }
	blank := strings.Repeat(" ", width)
	oldLine, newLine := 1, 1
	lastWasChange := false
	for i, p := range parts {
		raw := strings.Split(strings.Join(p.Lines, ""), "\n")
		if raw[len(raw)-1] == "" {
			raw = raw[:len(raw)-1]
		}
		if p.Added || p.Removed {
			if firstChanged == 0 {
				firstChanged = newLine
			}
			for _, l := range raw {
				if p.Added {
					out = append(out, "+"+num(newLine)+" "+l)
					newLine++
				} else {
					out = append(out, "-"+num(oldLine)+" "+l)
					oldLine++
				}
			}
			lastWasChange = true
			continue
		}
		context := func(lines []string) {
			for _, l := range lines {
				out = append(out, " "+num(oldLine)+" "+l)
				oldLine++
				newLine++
			}
		}
		skip := func(n int) {
			out = append(out, " "+blank+" ...")
			oldLine += n
			newLine += n
		}
		nextIsChange := i < len(parts)-1 && (parts[i+1].Added || parts[i+1].Removed)
		switch {
		case lastWasChange && nextIsChange:
			if len(raw) <= contextLines*2 {
				context(raw)
			} else {
				context(raw[:contextLines])
				skip(len(raw) - 2*contextLines)
				context(raw[len(raw)-contextLines:])
			}
		case lastWasChange:
			shown := raw[:min(contextLines, len(raw))]
			context(shown)
			if n := len(raw) - len(shown); n > 0 {
				skip(n)
			}
		case nextIsChange:
			n := max(0, len(raw)-contextLines)
			if n > 0 {
				skip(n)
			}
			context(raw[n:])
		default:
			oldLine += len(raw)
			newLine += len(raw)
		}
		lastWasChange = false
	}
	return strings.Join(out, "\n"), firstChanged
}

// normalizeToLF turns CRLF and lone CR into LF.
func normalizeToLF(s string) string {
	if !strings.ContainsRune(s, '\r') {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// detectLineEnding is "\r\n" when the first line break is CRLF.
func detectLineEnding(s string) string {
	lf := strings.IndexByte(s, '\n')
	crlf := strings.Index(s, "\r\n")
	if lf < 0 || crlf < 0 || crlf >= lf {
		return "\n"
	}
	return "\r\n"
}

// compatibility holds the NFKC mappings that occur in source files; pi
// normalizes with String#normalize("NFKC"), which Go's standard library
// cannot do in full (see the package report).
var compatibility = strings.NewReplacer(
	"\u2026", "...", "\ufb01", "fi", "\ufb02", "fl", "\ufb00", "ff", "\ufb03", "ffi", "\ufb04", "ffl",
	"\u2122", "TM", "\u00bd", "1\u20442", "\u00bc", "1\u20444", "\u00be", "3\u20444",
	"\u00b2", "2", "\u00b3", "3", "\u00b9", "1", "\u2024", ".", "\u2025", "..",
)

var fuzzyChars = strings.NewReplacer(
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'",
	"\u201C", `"`, "\u201D", `"`, "\u201E", `"`, "\u201F", `"`,
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ",
	"\u2007", " ", "\u2008", " ", "\u2009", " ", "\u200A", " ", "\u202F", " ", "\u205F", " ", "\u3000", " ",
)

// normalizeForFuzzyMatch: compatibility forms folded, trailing whitespace
// of every line dropped, typographic quotes, dashes and spaces made ASCII.
func normalizeForFuzzyMatch(s string) string {
	s = compatibility.Replace(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, jsstr.IsSpace)
	}
	return fuzzyChars.Replace(strings.Join(lines, "\n"))
}

type textMatch struct {
	found        bool
	index, width int
	fuzzy        bool
}

func fuzzyFindText(content, old string) textMatch {
	if i := strings.Index(content, old); i >= 0 {
		return textMatch{found: true, index: i, width: len(old)}
	}
	fc, fo := normalizeForFuzzyMatch(content), normalizeForFuzzyMatch(old)
	if i := strings.Index(fc, fo); i >= 0 {
		return textMatch{found: true, index: i, width: len(fo), fuzzy: true}
	}
	return textMatch{}
}

// countOccurrences counts old in content in the fuzzy space, as
// content.split(old).length - 1 does.
func countOccurrences(content, old string) int {
	fc, fo := normalizeForFuzzyMatch(content), normalizeForFuzzyMatch(old)
	if fo == "" {
		return jsstr.Len(fc) - 1
	}
	return strings.Count(fc, fo)
}

// replacement is one {oldText, newText} of an edit call.
type replacement struct{ oldText, newText string }

// editError is a failure pi reports to the model with this text.
type editError string

func (e editError) Error() string { return string(e) }

// applyEdits matches every replacement against the same original text
// and applies them together; it returns the text the diff is taken against
// and the result. When any replacement needed the fuzzy match, pi before
// 0.79.9 rewrote the whole file through its normalized text (base is that
// text); since then (keepLines) only the lines the replacements touch come
// from it and every other line keeps its bytes (base is content).
func applyEdits(content string, edits []replacement, path string, keepLines bool) (base, result string, err error) {
	n := len(edits)
	norm := make([]replacement, n)
	for i, e := range edits {
		norm[i] = replacement{normalizeToLF(e.oldText), normalizeToLF(e.newText)}
		if norm[i].oldText == "" {
			if n == 1 {
				return "", "", editError(fmt.Sprintf("oldText must not be empty in %s.", path))
			}
			return "", "", editError(fmt.Sprintf("edits[%d].oldText must not be empty in %s.", i, path))
		}
	}
	base = content
	fuzzy := false
	for _, e := range norm {
		if fuzzyFindText(content, e.oldText).fuzzy {
			base, fuzzy = normalizeForFuzzyMatch(content), true
			break
		}
	}
	type matched struct{ edit, index, width int }
	ms := make([]matched, 0, n)
	for i, e := range norm {
		m := fuzzyFindText(base, e.oldText)
		if !m.found {
			if n == 1 {
				return "", "", editError(fmt.Sprintf("Could not find the exact text in %s. The old text must match exactly including all whitespace and newlines.", path))
			}
			return "", "", editError(fmt.Sprintf("Could not find edits[%d] in %s. The oldText must match exactly including all whitespace and newlines.", i, path))
		}
		if k := countOccurrences(base, e.oldText); k > 1 {
			if n == 1 {
				return "", "", editError(fmt.Sprintf("Found %d occurrences of the text in %s. The text must be unique. Please provide more context to make it unique.", k, path))
			}
			return "", "", editError(fmt.Sprintf("Found %d occurrences of edits[%d] in %s. Each oldText must be unique. Please provide more context to make it unique.", k, i, path))
		}
		ms = append(ms, matched{i, m.index, m.width})
	}
	sort.SliceStable(ms, func(a, b int) bool { return ms[a].index < ms[b].index })
	for i := 1; i < len(ms); i++ {
		if ms[i-1].index+ms[i-1].width > ms[i].index {
			return "", "", editError(fmt.Sprintf("edits[%d] and edits[%d] overlap in %s. Merge them into one edit or target disjoint regions.", ms[i-1].edit, ms[i].edit, path))
		}
	}
	reps := make([]span, len(ms))
	for i, m := range ms {
		reps[i] = span{m.index, m.width, norm[m.edit].newText}
	}
	if fuzzy && keepLines {
		if reps, err = widenToLines(content, base, reps); err != nil {
			return "", "", err
		}
		base = content
	}
	result = base
	for i := len(reps) - 1; i >= 0; i-- {
		r := reps[i]
		result = result[:r.index] + r.text + result[r.index+r.width:]
	}
	if result == base {
		if n == 1 {
			return "", "", editError(fmt.Sprintf("No changes made to %s. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.", path))
		}
		return "", "", editError(fmt.Sprintf("No changes made to %s. The replacements produced identical content.", path))
	}
	return base, result, nil
}

// span is a replacement of width bytes at index by text.
type span struct {
	index, width int
	text         string
}

// lineSpans are the [start, end) byte ranges of content's lines, each with
// its "\n" (a last line without one included, no empty line after a final
// newline).
func lineSpans(content string) [][2]int {
	var out [][2]int
	for at := 0; at < len(content); {
		end := strings.IndexByte(content[at:], '\n')
		if end < 0 {
			end = len(content)
		} else {
			end += at + 1
		}
		out = append(out, [2]int{at, end})
		at = end
	}
	return out
}

// widenToLines turns replacements matched in norm (the fuzzy-normalized
// content) into replacements of content: each group of lines the
// replacements touch is rewritten from norm with them applied, every other
// line is kept (pi ≥ 0.79.9's widenReplacementsToLines).
func widenToLines(content, norm string, reps []span) ([]span, error) {
	orig, base := lineSpans(content), lineSpans(norm)
	if len(orig) != len(base) {
		return nil, editError("Cannot preserve unchanged lines because the base content has a different line count.")
	}
	type group struct {
		first, end int // lines [first, end)
		reps       []span
	}
	var groups []group
	for _, r := range reps { // sorted by index
		first := -1
		for i, l := range base {
			if r.index >= l[0] && r.index < l[1] {
				first = i
				break
			}
		}
		if first < 0 {
			return nil, editError("Replacement range is outside the base content.")
		}
		last := first
		for last < len(base) && base[last][1] < r.index+r.width {
			last++
		}
		if last >= len(base) {
			return nil, editError("Replacement range is outside the base content.")
		}
		if n := len(groups); n > 0 && first < groups[n-1].end {
			groups[n-1].end = max(groups[n-1].end, last+1)
			groups[n-1].reps = append(groups[n-1].reps, r)
			continue
		}
		groups = append(groups, group{first, last + 1, []span{r}})
	}
	out := make([]span, len(groups))
	for i, g := range groups {
		from, to := base[g.first][0], base[g.end-1][1]
		text := norm[from:to]
		for j := len(g.reps) - 1; j >= 0; j-- {
			r := g.reps[j]
			text = text[:r.index-from] + r.text + text[r.index-from+r.width:]
		}
		start := orig[g.first][0]
		out[i] = span{start, orig[g.end-1][1] - start, text}
	}
	return out, nil
}
