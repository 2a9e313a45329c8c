package run

import (
	"errors"
	"path"
	"strings"
)

// segPattern is one glob split at "/": "**" segments match any number of
// directories, other segments are path.Match patterns (* ? [..] \x).
type segPattern []string

// maxBraceExpansions bounds {a,b}{c,d}… blow-ups from hostile patterns.
const maxBraceExpansions = 4096

// compileSegs brace-expands a glob and splits each alternative into
// segments, translating the shell's [!x] negation into path.Match's [^x].
func compileSegs(glob string) ([]segPattern, error) {
	alts, err := expandBraces(glob)
	if err != nil {
		return nil, err
	}
	out := make([]segPattern, 0, len(alts))
	for _, a := range alts {
		var segs segPattern
		for _, s := range strings.Split(a, "/") {
			if s == "" {
				continue // leading, trailing or doubled slashes
			}
			if s != "**" {
				s = strings.ReplaceAll(s, "**", "*") // ** inside a segment is a plain *
				s = strings.ReplaceAll(s, "[!", "[^")
				if _, err := path.Match(s, ""); err != nil {
					return nil, errors.New("bad glob pattern " + glob)
				}
			}
			segs = append(segs, s)
		}
		out = append(out, segs)
	}
	return out, nil
}

// expandBraces expands {a,b,c} alternatives (nested braces allowed, "\{"
// escapes). Braces without a top-level comma are literal, as in bash.
func expandBraces(s string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth > 0 {
				continue
			}
			alts := splitTopLevel(s[open+1 : i])
			if len(alts) < 2 {
				open = -1
				continue
			}
			var out []string
			for _, a := range alts {
				rest, err := expandBraces(s[:open] + a + s[i+1:])
				if err != nil {
					return nil, err
				}
				out = append(out, rest...)
				if len(out) > maxBraceExpansions {
					return nil, errors.New("glob pattern expands to too many alternatives")
				}
			}
			return out, nil
		}
	}
	return []string{s}, nil
}

func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// match reports whether the path segments s match p. A "**" matches zero or
// more segments, except at the end of the pattern where it needs at least
// one (so "dir/**" is what is inside dir, not dir itself, as in gitignore).
func (p segPattern) match(s []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			for len(p) > 0 && p[0] == "**" {
				p = p[1:]
			}
			if len(p) == 0 {
				return len(s) > 0
			}
			for i := 0; i <= len(s); i++ {
				if p.match(s[i:]) {
					return true
				}
			}
			return false
		}
		if len(s) == 0 {
			return false
		}
		if ok, _ := path.Match(p[0], s[0]); !ok {
			return false
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}

// couldMatchBelow reports whether some path strictly below the directory
// dir (segments) might match p, to prune walks.
func (p segPattern) couldMatchBelow(dir []string) bool {
	for i, d := range dir {
		if i >= len(p) {
			return false
		}
		if p[i] == "**" {
			return true
		}
		if ok, _ := path.Match(p[i], d); !ok {
			return false
		}
	}
	return len(p) > len(dir)
}

// gitGlob is one gitignore-style pattern, the syntax of .gitignore lines
// and of ripgrep's --glob: a pattern without an inner "/" matches the name
// at any depth, one with a "/" is anchored at the base directory; a
// trailing "/" matches directories only; a leading "!" negates.
type gitGlob struct {
	alts    []segPattern
	negate  bool
	dirOnly bool
}

func parseGitGlob(line string) (gitGlob, bool, error) {
	var g gitGlob
	if strings.HasPrefix(line, "!") {
		g.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		g.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return g, false, nil
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if !anchored {
		line = "**/" + line
	}
	alts, err := compileSegs(line)
	if err != nil {
		return g, false, err
	}
	g.alts = alts
	return g, true, nil
}

// matches reports whether rel (segments below the pattern's base) matches.
func (g *gitGlob) matches(rel []string, isDir bool) bool {
	if g.dirOnly && !isDir {
		return false
	}
	for _, a := range g.alts {
		if a.match(rel) {
			return true
		}
	}
	return false
}

// verdict of an ignore or override check.
type verdict int

const (
	noVerdict verdict = iota
	ignored
	whitelisted
)

// globSet is an ordered list of gitGlobs where the last match wins.
type globSet []gitGlob

func (gs globSet) verdict(rel []string, isDir bool) verdict {
	for i := len(gs) - 1; i >= 0; i-- {
		if gs[i].matches(rel, isDir) {
			if gs[i].negate {
				return whitelisted
			}
			return ignored
		}
	}
	return noVerdict
}
