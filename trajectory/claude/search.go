package claude

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

const (
	globLimit        = 100
	grepHeadLimit    = 250
	grepMaxColumns   = 500
	grepPersistLimit = 20000
	globPersistLimit = 50000
)

type globNative struct {
	Filenames       []string `json:"filenames"`
	DurationMs      int64    `json:"durationMs"`
	NumFiles        int      `json:"numFiles"`
	Truncated       bool     `json:"truncated"`
	TotalMatches    *int     `json:"totalMatches,omitempty"`
	CountIsComplete *bool    `json:"countIsComplete,omitempty"`
}

// glob runs Claude Code's Glob: ripgrep --files --glob PATTERN
// --sort=modified --no-ignore --hidden below the path, oldest first, at
// most 100 files. Files of equal modification time are listed as the
// recorded observation lists them (see recordedTies).
func (s *toolSession) glob(in gjson.Result, start time.Time, recorded *trajectory.Observation) (toolResult, error) {
	pattern := in.Get("pattern").Str
	base := s.shell.Cwd()
	if p := in.Get("path"); p.Type == gjson.String && p.Str != "" {
		dir := s.absPath(p.Str)
		fi, err := os.Stat(dir)
		if err != nil {
			msg := fmt.Sprintf("Directory does not exist: %s. Note: your current working directory is %s.", p.Str, s.cwd())
			if m := s.cwdSibling(dir); m != "" {
				msg += " Did you mean " + m + "?"
			}
			return rejected(msg), nil
		}
		if !fi.IsDir() {
			return rejected("Path is not a directory: " + p.Str), nil
		}
		base = dir
	}
	if filepath.IsAbs(pattern) {
		pattern = s.local(pattern)
	}
	g, err := run.Glob(base, pattern, run.GlobOptions{WalkOptions: run.WalkOptions{Hidden: true, NoIgnore: true, IncludeVCS: true}})
	if err != nil && isPvisorError(err) {
		return toolResult{}, err
	}
	files := g.Files
	sortByMtime(files, false)
	abs := s.style.is(s.style.absGlob, false)
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = s.shownPath(f.Path, abs)
	}
	if recorded != nil && !recorded.IsError {
		recordedTies(files, names, strings.Split(recorded.Content, "\n"))
	}
	total := len(files)
	truncated := total > globLimit
	if truncated {
		files, names = files[:globLimit], names[:globLimit]
	}
	nat := globNative{Filenames: names, DurationMs: time.Since(start).Milliseconds(), NumFiles: len(names), Truncated: truncated}
	// The versions that print relative paths also count the matches.
	modern := !abs
	if modern {
		complete := true
		nat.TotalMatches, nat.CountIsComplete = &total, &complete
	}
	res := toolResult{native: nat}
	if len(names) == 0 {
		res.content = "No files found"
		return res, nil
	}
	lines := names
	if truncated {
		note := "(Results are truncated. Consider using a more specific path or pattern.)"
		if modern {
			note = fmt.Sprintf("(Showing %d of %d matching files; %d more are not listed. Narrow the pattern or path to see the rest.)",
				len(names), total, total-len(names))
		}
		lines = append(append([]string{}, names...), note)
	}
	res.content = strings.Join(lines, "\n")
	if modern && jsstr.Len(res.content) > globPersistLimit {
		res.content = s.persisted(nil, res.content, "")
	}
	return res, nil
}

// shownPath is how the search tools print a path: relative to the current
// directory unless it is outside it (2.1), or absolute (older versions).
func (s *toolSession) shownPath(p string, abs bool) string {
	if !abs {
		if rel, err := filepath.Rel(s.shell.Cwd(), p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return s.recorded(p)
}

type grepNative struct {
	Mode          string   `json:"mode"`
	NumFiles      int      `json:"numFiles"`
	Filenames     []string `json:"filenames"`
	Content       *string  `json:"content,omitempty"`
	NumLines      *int     `json:"numLines,omitempty"`
	TotalLines    *int     `json:"totalLines,omitempty"` // 2.1.210 on: lines before head_limit/offset
	NumMatches    *int     `json:"numMatches,omitempty"`
	AppliedLimit  *int     `json:"appliedLimit,omitempty"`
	AppliedOffset *int     `json:"appliedOffset,omitempty"`
}

// grepFilesNative keeps the key order of files_with_matches results.
type grepFilesNative struct {
	Mode          string   `json:"mode"`
	Filenames     []string `json:"filenames"`
	NumFiles      int      `json:"numFiles"`
	AppliedLimit  *int     `json:"appliedLimit,omitempty"`
	AppliedOffset *int     `json:"appliedOffset,omitempty"`
}

// grep runs Claude Code's Grep: ripgrep --hidden (VCS directories left
// out) --max-columns 500 with the call's flags, in one of three output
// modes, paginated by head_limit (250 by default) and offset.
func (s *toolSession) grep(in gjson.Result) (toolResult, error) {
	mode := in.Get("output_mode").Str
	if mode == "" {
		mode = "files_with_matches"
	}
	target := s.shell.Cwd()
	if p := in.Get("path"); p.Type == gjson.String && p.Str != "" {
		target = s.absPath(p.Str)
		if _, err := os.Stat(target); err != nil {
			msg := fmt.Sprintf("Path does not exist: %s. Note: your current working directory is %s.", p.Str, s.cwd())
			if m := s.cwdSibling(target); m != "" {
				msg += " Did you mean " + m + "?"
			}
			return rejected(msg), nil
		}
	}
	req := run.GrepRequest{
		Pattern:         in.Get("pattern").Str,
		Path:            target,
		CaseInsensitive: in.Get("-i").Bool(),
		Multiline:       in.Get("multiline").Bool(),
		WalkOptions:     run.WalkOptions{Hidden: true},
	}
	if t := in.Get("type").Str; t != "" {
		req.Types = []string{t}
	}
	req.Globs = grepGlobs(in.Get("glob").Str)
	switch mode {
	case "content":
		req.Mode = run.Content
		switch c := firstNumber(in, "context", "-C"); {
		case c >= 0:
			req.Before, req.After = c, c
		default:
			req.Before, req.After = max(0, firstNumber(in, "-B")), max(0, firstNumber(in, "-A"))
		}
	case "count":
		req.Mode = run.Count
	default:
		req.Mode = run.FilesWithMatches
	}
	g, err := run.Grep(req)
	if err != nil && isPvisorError(err) {
		return toolResult{}, err
	}
	limit, offset := -1, 0
	if h := in.Get("head_limit"); h.Type == gjson.Number {
		limit = int(h.Num)
	}
	if o := in.Get("offset"); o.Type == gjson.Number && o.Num > 0 {
		offset = int(o.Num)
	}
	abs := s.style.is(s.style.absGrep, false)
	single := false
	if fi, err := os.Stat(target); err == nil && !fi.IsDir() {
		single = true
	}
	var res toolResult
	switch mode {
	case "content":
		lines := s.grepContent(g, req, in, single)
		items, applied := paginate(lines, limit, offset)
		for i, l := range items {
			items[i] = s.relativizeAt(l, strings.Index(l[min(len(l), driveLetter(l)):], ":")+driveLetter(l), abs)
		}
		content := strings.Join(items, "\n")
		n := len(items)
		nat := grepNative{Mode: "content", Filenames: []string{}, Content: &content, NumLines: &n, AppliedLimit: applied}
		if s.since(grepTotalLinesSince) {
			total := len(lines)
			nat.TotalLines = &total
		}
		if offset > 0 {
			nat.AppliedOffset = &offset
		}
		text := content
		if text == "" {
			text = "No matches found"
		}
		if p := pagination(applied, offset); p != "" {
			text += "\n\n[Showing results with pagination = " + p + "]"
		}
		res = toolResult{content: text, native: nat}
	case "count":
		var lines []string
		for _, f := range g.Files {
			lines = append(lines, f.Path+":"+strconv.Itoa(f.MatchLines))
		}
		items, applied := paginate(lines, limit, offset)
		total, files := 0, 0
		for i, l := range items {
			j := strings.LastIndex(l, ":")
			if c, err := strconv.Atoi(l[j+1:]); err == nil {
				total += c
				files++
			}
			items[i] = s.relativizeAt(l, j, abs)
		}
		content := strings.Join(items, "\n")
		nat := grepNative{Mode: "count", NumFiles: files, Filenames: []string{}, Content: &content, NumMatches: &total, AppliedLimit: applied}
		if offset > 0 {
			nat.AppliedOffset = &offset
		}
		text := content
		if text == "" {
			text = "No matches found"
		}
		p := pagination(applied, offset)
		if p != "" {
			p = " with pagination = " + p
		}
		text += fmt.Sprintf("\n\nFound %d total %s across %d %s.%s", total, plural(total, "occurrence"), files, plural(files, "file"), p)
		res = toolResult{content: text, native: nat}
	default:
		files := make([]run.FileEntry, len(g.Files))
		for i, f := range g.Files {
			files[i] = run.FileEntry{Path: f.Path, ModTime: f.ModTime}
		}
		sort.SliceStable(files, func(i, j int) bool {
			if a, b := files[i].ModTime, files[j].ModTime; !a.Equal(b) {
				return a.After(b)
			}
			return localeLess(files[i].Path, files[j].Path)
		})
		var paths []string
		for _, f := range files {
			paths = append(paths, f.Path)
		}
		items, applied := paginate(paths, limit, offset)
		names := make([]string, len(items))
		for i, p := range items {
			names[i] = s.shownPath(p, abs)
		}
		nat := grepFilesNative{Mode: "files_with_matches", Filenames: names, NumFiles: len(names), AppliedLimit: applied}
		if offset > 0 {
			nat.AppliedOffset = &offset
		}
		text := "No files found"
		if len(names) > 0 {
			p := pagination(applied, offset)
			if p != "" {
				p = " " + p
			}
			text = fmt.Sprintf("Found %d %s%s\n%s", len(names), plural(len(names), "file"), p, strings.Join(names, "\n"))
		}
		res = toolResult{content: text, native: nat}
	}
	if s.style.modern() && jsstr.Len(res.content) > grepPersistLimit {
		res.content = s.persisted(nil, res.content, "")
	}
	return res, nil
}

// grepContent renders content-mode matches as ripgrep prints them with
// --no-heading: "path:N:text" for matches, "path-N-text" for context, "--"
// between groups, no path when a single file was searched.
func (s *toolSession) grepContent(g run.GrepResult, req run.GrepRequest, in gjson.Result, single bool) []string {
	numbers := true
	if n := in.Get("-n"); n.IsBool() {
		numbers = n.Bool()
	}
	only := in.Get("-o").Bool()
	re := grepRegexp(req)
	ctx := req.Before > 0 || req.After > 0
	var out []string
	groups := 0
	for _, f := range g.Files {
		if f.Binary {
			out = append(out, "binary file matches (found \"\\0\" byte around offset 0)")
			continue
		}
		prev := -1
		for _, l := range f.Lines {
			if ctx && (prev < 0 || l.Number != prev+1) {
				if groups > 0 {
					out = append(out, "--")
				}
				groups++
			}
			prev = l.Number
			sep := "-"
			if l.Match {
				sep = ":"
			}
			prefix := ""
			if !single {
				prefix = f.Path + sep
			}
			if numbers {
				prefix += strconv.Itoa(l.Number) + sep
			}
			if only && l.Match && re != nil {
				for _, m := range re.FindAllString(l.Text, -1) {
					if m != "" {
						out = append(out, prefix+m)
					}
				}
				continue
			}
			text := l.Text
			if len(text) > grepMaxColumns {
				if l.Match {
					n := 1
					if re != nil {
						n = max(1, len(re.FindAllStringIndex(text, -1)))
					}
					text = fmt.Sprintf("[Omitted long line with %d matches]", n)
				} else {
					text = "[Omitted long context line]"
				}
			}
			out = append(out, prefix+strings.TrimSuffix(text, "\r"))
		}
	}
	return out
}

func grepRegexp(req run.GrepRequest) *regexp.Regexp {
	flags := ""
	if req.CaseInsensitive {
		flags += "i"
	}
	if req.Multiline {
		flags += "s"
	}
	pat := req.Pattern
	if flags != "" {
		pat = "(?" + flags + ")" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil
	}
	return re
}

// relativizeAt rewrites the path before byte i of a result line as the CLI
// does: relative to the current directory unless outside it.
func (s *toolSession) relativizeAt(line string, i int, abs bool) string {
	if i <= 0 {
		// No colon: the CLI leaves the line as ripgrep printed it.
		if rest, ok := strings.CutPrefix(line, s.ws+"/"); ok && s.ws != s.orig {
			return s.orig + "/" + rest
		}
		return line
	}
	p := line[:i]
	if !filepath.IsAbs(p) {
		return line
	}
	return s.shownPath(p, abs) + line[i:]
}

func driveLetter(l string) int {
	if len(l) >= 2 && l[1] == ':' && (l[0]|0x20) >= 'a' && (l[0]|0x20) <= 'z' {
		return 2
	}
	return 0
}

// grepGlobs splits the glob argument as the CLI does: at whitespace, and
// at commas outside {…} alternatives.
func grepGlobs(arg string) []string {
	var out []string
	for _, part := range strings.Fields(arg) {
		if strings.Contains(part, "{") && strings.Contains(part, "}") {
			out = append(out, part)
			continue
		}
		for _, g := range strings.Split(part, ",") {
			if g != "" {
				out = append(out, g)
			}
		}
	}
	return out
}

func firstNumber(in gjson.Result, keys ...string) int {
	for _, k := range keys {
		if v := in.Get(gjsonKey(k)); v.Type == gjson.Number {
			return int(v.Num)
		}
	}
	return -1
}

// gjsonKey escapes a key for gjson paths ("-n" is fine, but be safe).
func gjsonKey(k string) string {
	return strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`).Replace(k)
}

// paginate applies offset and head_limit (250 when absent, 0 for none) and
// reports the limit when it cut something off.
func paginate(items []string, limit, offset int) ([]string, *int) {
	if offset > len(items) {
		offset = len(items)
	}
	rest := items[offset:]
	if limit == 0 {
		return append([]string{}, rest...), nil
	}
	if limit < 0 {
		limit = grepHeadLimit
	}
	if len(rest) > limit {
		return append([]string{}, rest[:limit]...), &limit
	}
	return append([]string{}, rest...), nil
}

func pagination(limit *int, offset int) string {
	var parts []string
	if limit != nil {
		parts = append(parts, "limit: "+strconv.Itoa(*limit))
	}
	if offset > 0 {
		parts = append(parts, "offset: "+strconv.Itoa(offset))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
