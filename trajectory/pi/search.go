package pi

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
)

// searchTimeout bounds one fd/rg run (pi has none; a replay must end).
const searchTimeout = 10 * time.Minute

// searchOutputCap keeps the head of rg's JSON stream: pi stops reading
// after limit matches, so only the first ones matter.
const searchOutputCap = 64 << 20

// lookTool finds fd or rg where pi looks: ~/.pi/agent/bin first, then the
// system names on PATH.
func (s *session) lookTool(ctx context.Context, name string, system ...string) string {
	if p, ok := s.tools[name]; ok {
		return p
	}
	found := ""
	if s.home != "" {
		p := filepath.Join(s.home, ".pi", "agent", "bin", name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			found = p
		}
	}
	for _, n := range system {
		if found != "" {
			break
		}
		for _, dir := range filepath.SplitList(envValue(s.env.Env, "PATH")) {
			if dir == "" {
				continue
			}
			p := filepath.Join(dir, n)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				found = p
				break
			}
		}
	}
	if name == "fd" && found != "" {
		// --no-require-git came with fd 8.7; older ones (Debian 12's
		// fdfind 8.6) refuse it, and it only matters outside a git repo.
		help, err := s.r.Shell(ctx, run.ShellRequest{Argv: []string{found, "--help"}, Dir: s.ws, Timeout: 30 * time.Second})
		s.fdOld = err == nil && !bytes.Contains(help.Stdout.Data, []byte("--no-require-git"))
	}
	s.tools[name] = found
	return found
}

func (s *session) runArgv(ctx context.Context, argv []string, logPath string) (run.ShellResult, error) {
	res, err := s.r.Shell(ctx, run.ShellRequest{Argv: argv, Dir: s.ws, Timeout: searchTimeout,
		LogPath: logPath, MaxOutput: searchOutputCap, KillBackground: true})
	if err != nil && ctx.Err() != nil {
		return res, ctx.Err()
	}
	if res.Canceled {
		return res, context.Canceled
	}
	return res, err
}

// outputLines splits a stream as readline does: "\n" ends a line, a
// final line without one still counts.
func outputLines(b []byte) []string {
	s := string(b)
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// find lists files and directories matching a glob with fd: the pattern
// matches names, or (when it has a '/') whole paths; hidden files are
// included, .gitignore respected, at most limit (1000) results.
func (s *session) find(ctx context.Context, args gjson.Result, logPath string) (result, error) {
	pattern := args.Get("pattern").Str
	_, real := s.resolve(orDot(args.Get("path").Str))
	limit := 1000
	if l := args.Get("limit"); l.Type == gjson.Number {
		limit = int(l.Num)
	}
	var lines []string
	fd := s.lookTool(ctx, "fd", "fd", "fdfind")
	if fd == "" {
		var err error
		if lines, err = globFallback(pattern, real, limit); err != nil {
			return failure(s.unmapText(err.Error())), nil
		}
	} else {
		argv := []string{fd, "--glob", "--color=never", "--hidden"}
		if !s.fdOld {
			argv = append(argv, "--no-require-git")
		}
		argv = append(argv, "--max-results", strconv.Itoa(limit))
		eff := pattern
		if strings.Contains(pattern, "/") {
			argv = append(argv, "--full-path")
			if !strings.HasPrefix(pattern, "/") && !strings.HasPrefix(pattern, "**/") && pattern != "**" {
				eff = "**/" + pattern
			}
		}
		argv = append(argv, "--", eff, real)
		res, err := s.runArgv(ctx, argv, logPath)
		if err != nil {
			if run.KindOf(err) == run.NotFound {
				return failure("Failed to run fd: spawn " + fd + " ENOENT"), nil
			}
			return result{}, fmt.Errorf("pi: find: %w", err)
		}
		lines = outputLines(res.Stdout.Head())
		if res.ExitCode != 0 && len(lines) == 0 {
			msg := s.unmapText(strings.TrimSpace(string(res.Stderr.Data)))
			if msg == "" {
				msg = fmt.Sprintf("fd exited with code %d", res.ExitCode)
			}
			return failure(msg), nil
		}
	}
	if len(strings.Join(lines, "\n")) == 0 {
		return result{text: "No files found matching pattern"}, nil
	}
	var rel []string
	for _, l := range lines {
		l = strings.TrimSpace(strings.TrimSuffix(l, "\r"))
		if l == "" {
			continue
		}
		slash := strings.HasSuffix(l, "/")
		r := l
		if strings.HasPrefix(l, real) {
			r = l[min(len(real)+1, len(l)):]
		} else if x, err := filepath.Rel(real, l); err == nil {
			r = x
		}
		if slash && !strings.HasSuffix(r, "/") {
			r += "/"
		}
		rel = append(rel, r)
	}
	tr := truncateHead(strings.Join(rel, "\n"), maxSafeInteger, defaultMaxBytes, s.sem.trailingNewlineLine)
	text := tr.Content
	var notices []string
	var o jsObject
	if len(rel) >= limit {
		notices = append(notices, fmt.Sprintf("%d results limit reached. Use limit=%d for more, or refine pattern", limit, limit*2))
		o.num("resultLimitReached", limit)
	}
	if tr.Truncated {
		notices = append(notices, formatSize(defaultMaxBytes)+" limit reached")
		o.raw("truncation", string(tr.appendJSON(nil)))
	}
	if len(notices) > 0 {
		text += "\n\n[" + strings.Join(notices, ". ") + "]"
	}
	return result{text: text, details: o.native()}, nil
}

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// globFallback approximates fd when it is not installed: the same
// matching rules through run.Glob, hidden entries and directories
// included, sorted by path as fd prints a short result list.
func globFallback(pattern, root string, limit int) ([]string, error) {
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("[fd error]: Search path '%s' is not a directory.\n[fd error]: No valid search paths given.", root)
	}
	eff := pattern
	if strings.Contains(pattern, "/") && !strings.HasPrefix(pattern, "**/") && pattern != "**" {
		eff = "**/" + strings.TrimPrefix(pattern, "/")
	}
	g, err := run.Glob(root, eff, run.GlobOptions{WalkOptions: run.WalkOptions{Hidden: true}, IncludeDirs: true})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range g.Files {
		p := filepath.Join(root, filepath.FromSlash(f.Rel))
		if f.IsDir {
			p += "/"
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.TrimSuffix(out[i], "/") < strings.TrimSuffix(out[j], "/")
	})
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// grepMatch is one match rg reported.
type grepMatch struct {
	file string
	line int
	text string
	has  bool // text known (rg gave it as UTF-8)
}

// grep searches file contents with rg and prints "path:N: line" (and
// "path-N- line" context lines), at most limit (100) matches, long lines
// cut at 500 characters.
func (s *session) grep(ctx context.Context, args gjson.Result, logPath string) (result, error) {
	pattern := args.Get("pattern").Str
	shown, real := s.resolve(orDot(args.Get("path").Str))
	st, err := os.Stat(real)
	if err != nil {
		return failure("Path not found: " + shown), nil
	}
	isDir := st.IsDir()
	ctxLines := 0
	if c := args.Get("context"); c.Type == gjson.Number && c.Num > 0 {
		ctxLines = int(c.Num)
	}
	limit := 100
	if l := args.Get("limit"); l.Type == gjson.Number {
		limit = int(l.Num)
	}
	limit = max(1, limit)
	var matches []grepMatch
	count, limitReached := 0, false
	rg := s.lookTool(ctx, "rg", "rg")
	if rg != "" && s.sem.grepContextFromRg {
		return s.grepRg(ctx, rg, args, real, isDir, ctxLines, limit, logPath)
	}
	if rg == "" {
		var err error
		if matches, count, limitReached, err = grepFallback(args, pattern, real, limit); err != nil {
			return failure(err.Error()), nil
		}
	} else {
		argv := []string{rg, "--json", "--line-number", "--color=never", "--hidden"}
		if args.Get("ignoreCase").Bool() {
			argv = append(argv, "--ignore-case")
		}
		if args.Get("literal").Bool() {
			argv = append(argv, "--fixed-strings")
		}
		if g := args.Get("glob").Str; g != "" {
			argv = append(argv, "--glob", g)
		}
		argv = append(argv, "--", pattern, real)
		res, err := s.runArgv(ctx, argv, logPath)
		if err != nil {
			if run.KindOf(err) == run.NotFound {
				return failure("Failed to run ripgrep: spawn " + rg + " ENOENT"), nil
			}
			return result{}, fmt.Errorf("pi: grep: %w", err)
		}
		for _, line := range outputLines(res.Stdout.Head()) {
			if strings.TrimSpace(line) == "" || count >= limit {
				continue
			}
			ev := gjson.Parse(line)
			if ev.Get("type").Str != "match" {
				continue
			}
			count++
			m := grepMatch{file: ev.Get("data.path.text").Str, line: int(ev.Get("data.line_number").Num)}
			if t := ev.Get("data.lines.text"); t.Exists() {
				m.text, m.has = t.Str, true
			}
			if m.file != "" && ev.Get("data.line_number").Type == gjson.Number {
				matches = append(matches, m)
			}
			if count >= limit {
				limitReached = true
			}
		}
		if !limitReached && res.ExitCode != 0 && res.ExitCode != 1 {
			msg := s.unmapText(strings.TrimSpace(string(res.Stderr.Data)))
			if msg == "" {
				msg = fmt.Sprintf("ripgrep exited with code %d", res.ExitCode)
			}
			return failure(msg), nil
		}
	}
	if count == 0 {
		return result{text: "No matches found"}, nil
	}
	formatPath := func(file string) string {
		if isDir {
			if r, err := filepath.Rel(real, file); err == nil && r != "" && !strings.HasPrefix(r, "..") {
				return filepath.ToSlash(r)
			}
		}
		return filepath.Base(file)
	}
	files := map[string][]string{}
	fileLines := func(file string) []string {
		if l, ok := files[file]; ok {
			return l
		}
		var l []string
		if data, err := os.ReadFile(file); err == nil {
			l = strings.Split(normalizeToLF(decodeUTF8(data, false)), "\n")
		}
		files[file] = l
		return l
	}
	var out []string
	cut := false
	for _, m := range matches {
		rel := formatPath(m.file)
		if ctxLines == 0 && m.has {
			t := strings.ReplaceAll(m.text, "\r\n", "\n")
			t = strings.TrimSuffix(strings.ReplaceAll(t, "\r", ""), "\n")
			t, c := truncateLine(t, grepMaxLineLength)
			cut = cut || c
			out = append(out, fmt.Sprintf("%s:%d: %s", rel, m.line, t))
			continue
		}
		lines := fileLines(m.file)
		if len(lines) == 0 {
			out = append(out, fmt.Sprintf("%s:%d: (unable to read file)", rel, m.line))
			continue
		}
		from, to := m.line, m.line
		if ctxLines > 0 {
			from, to = max(1, m.line-ctxLines), min(len(lines), m.line+ctxLines)
		}
		for n := from; n <= to; n++ {
			t := ""
			if n-1 < len(lines) {
				t = lines[n-1]
			}
			t, c := truncateLine(strings.ReplaceAll(t, "\r", ""), grepMaxLineLength)
			cut = cut || c
			if n == m.line {
				out = append(out, fmt.Sprintf("%s:%d: %s", rel, n, t))
			} else {
				out = append(out, fmt.Sprintf("%s-%d- %s", rel, n, t))
			}
		}
	}
	tr := truncateHead(strings.Join(out, "\n"), maxSafeInteger, defaultMaxBytes, s.sem.trailingNewlineLine)
	return grepResult(tr, limitReached, limit, cut), nil
}

// grepResult is the kept output with pi's notices (match limit, byte cap,
// cut lines) and the details that record them.
func grepResult(tr truncation, limitReached bool, limit int, cut bool) result {
	text := tr.Content
	var notices []string
	var o jsObject
	if limitReached {
		notices = append(notices, fmt.Sprintf("%d matches limit reached. Use limit=%d for more, or refine pattern", limit, limit*2))
		o.num("matchLimitReached", limit)
	}
	if tr.Truncated {
		notices = append(notices, formatSize(defaultMaxBytes)+" limit reached")
		o.raw("truncation", string(tr.appendJSON(nil)))
	}
	if cut {
		notices = append(notices, fmt.Sprintf("Some lines truncated to %d chars. Use read tool to see full lines", grepMaxLineLength))
		o.boolean("linesTruncated", true)
	}
	if len(notices) > 0 {
		text += "\n\n[" + strings.Join(notices, ". ") + "]"
	}
	return result{text: text, details: o.native()}
}

// grepFallback approximates rg when it is not installed, with run.Grep
// (RE2 instead of Rust regex syntax).
func grepFallback(args gjson.Result, pattern, root string, limit int) ([]grepMatch, int, bool, error) {
	req := run.GrepRequest{Pattern: pattern, Path: root, Mode: run.Content,
		CaseInsensitive: args.Get("ignoreCase").Bool(), FixedStrings: args.Get("literal").Bool(),
		WalkOptions: run.WalkOptions{Hidden: true}}
	if g := args.Get("glob").Str; g != "" {
		req.Globs = []string{g}
	}
	res, err := run.Grep(req)
	if err != nil {
		return nil, 0, false, err
	}
	var out []grepMatch
	for _, f := range res.Files {
		for _, l := range f.Lines {
			if !l.Match {
				continue
			}
			out = append(out, grepMatch{file: f.Path, line: l.Number, text: l.Text, has: true})
			if len(out) >= limit {
				return out, len(out), true, nil
			}
		}
	}
	return out, len(out), false, nil
}
