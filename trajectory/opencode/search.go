package opencode

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// OpenCode's glob and grep tools run ripgrep with fixed arguments and print
// the results in ripgrep's order. The replay runs the same ripgrep command
// when rg is on the tools' PATH (OpenCode needs it there too), so matching
// rules, regex syntax and error texts are ripgrep's own; without rg it falls
// back to the run package's ripgrep-compatible walk, in name order.
// Results are put in order by order.go.

const searchLimit = 100

// rgOutput runs rg in dir and returns its stdout, stderr and exit code.
func (s *session) rgOutput(ctx context.Context, dir string, args ...string) ([]byte, string, int, error) {
	res, err := s.runner.Shell(ctx, run.ShellRequest{Argv: append([]string{s.rg}, args...), Dir: dir, MaxOutput: 64 << 20})
	if err != nil {
		return nil, "", 0, err
	}
	return res.Stdout.Head(), string(res.Stderr.Data), res.ExitCode, nil
}

// rgPath is the path ripgrep prints, without "./" and leading slashes.
func rgPath(p string) string {
	for strings.HasPrefix(p, "./") || strings.HasPrefix(p, ".\\") {
		p = p[2:]
	}
	return strings.ReplaceAll(strings.TrimLeft(p, "/\\"), "\\", "/")
}

func (s *session) glob(ctx context.Context, args gjson.Result, recorded []recordedFile) (result, error) {
	pattern := args.Get("pattern").Str
	n := s.cwd
	if p := args.Get("path"); p.Type == gjson.String {
		n = s.resolve(p.Str)
	}
	if st, err := os.Stat(n); err == nil && !st.IsDir() {
		return toolError("glob path must be a directory: " + n), nil
	} else if err != nil {
		// ripgrep cannot be started in a missing directory.
		return toolError("ripgrep execution failed"), nil
	}
	var files []string
	if s.rg != "" {
		out, _, code, err := s.rgOutput(ctx, n, "--no-config", "--files", "--glob="+pattern, "--glob=!**/.git/**", ".")
		if err != nil {
			return result{}, err
		}
		if code != 0 && code != 1 && code != 2 {
			return toolError("ripgrep failed with code " + strconv.Itoa(code)), nil
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if line := sc.Text(); line != "" {
				files = append(files, rgPath(line))
			}
		}
	} else {
		res, err := run.Glob(n, pattern, run.GlobOptions{Limit: searchLimit + 1})
		if err != nil {
			return toolError("ripgrep execution failed"), nil
		}
		for _, f := range res.Files {
			files = append(files, f.Rel)
		}
	}
	abs := make([]string, len(files))
	for i, f := range files {
		abs[i] = filepath.Join(n, f)
	}
	files = orderGlob(abs, recorded)
	truncated := len(files) == searchLimit
	var lines []string
	if len(files) == 0 {
		lines = append(lines, "No files found")
	}
	lines = append(lines, files...)
	if len(files) > 0 && truncated {
		lines = append(lines, "", "(Results are truncated: showing first 100 results. Consider using a more specific path or pattern.)")
	}
	r := result{output: strings.Join(lines, "\n"), title: s.rel(n)}
	r.metadata = jobj{{"count", len(files)}, {"truncated", truncated}}
	return r, nil
}

// match is one line ripgrep reported.
type match struct {
	path string // relative to the searched directory, then absolute
	line int
	text string // with its line terminator, as ripgrep prints it
}

func (s *session) grep(ctx context.Context, args gjson.Result, recorded []recordedFile) (result, error) {
	pattern := args.Get("pattern").Str
	if pattern == "" {
		return toolError("pattern is required"), nil
	}
	include := args.Get("include").Str
	y := s.cwd
	if p := args.Get("path"); p.Type == gjson.String {
		y = s.resolve(p.Str)
	}
	st, statErr := os.Stat(y)
	isDir := statErr == nil && st.IsDir()
	dir := y
	if !isDir {
		// A file (or a missing path) searches its whole directory.
		dir = filepath.Dir(y)
	}
	if _, err := os.Stat(dir); err != nil {
		return toolError("ripgrep execution failed"), nil
	}
	var matches []match
	if s.rg != "" {
		rgArgs := []string{"--no-config", "--json", "--hidden", "--no-messages"}
		if include != "" {
			rgArgs = append(rgArgs, "--glob="+include)
		}
		rgArgs = append(rgArgs, "--glob=!**/.git/**", "--", pattern, ".")
		out, stderr, code, err := s.rgOutput(ctx, dir, rgArgs...)
		if err != nil {
			return result{}, err
		}
		if code == 2 && (strings.Contains(stderr, "regex parse error") || strings.Contains(stderr, "error parsing regex")) {
			return toolError(strings.TrimSpace(stderr)), nil
		}
		if code != 0 && code != 1 && code != 2 {
			msg := strings.TrimSpace(stderr)
			if msg == "" {
				msg = "ripgrep failed with code " + strconv.Itoa(code)
			}
			return toolError(msg), nil
		}
		if code != 1 {
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			for sc.Scan() {
				line := sc.Bytes()
				if len(line) > 65536 {
					return toolError("Ripgrep JSON record exceeded 65536 bytes"), nil
				}
				rec := gjson.ParseBytes(line)
				if rec.Get("type").Str != "match" {
					continue
				}
				d := rec.Get("data")
				text := d.Get("lines.text")
				if text.Type != gjson.String {
					return toolError("Invalid ripgrep match output"), nil
				}
				matches = append(matches, match{path: rgPath(d.Get("path.text").Str), line: int(d.Get("line_number").Int()), text: text.Str})
			}
		}
	} else {
		var err error
		if matches, err = grepFallback(dir, pattern, include); err != nil {
			return toolError(err.Error()), nil
		}
	}
	for i := range matches {
		matches[i].path = filepath.Join(dir, matches[i].path)
	}
	matches = orderGrep(matches, recorded)
	if len(matches) == 0 {
		r := result{output: "No files found", title: pattern}
		r.metadata = jobj{{"matches", 0}, {"truncated", false}}
		return r, nil
	}
	truncated := len(matches) == searchLimit
	head := "Found " + strconv.Itoa(len(matches)) + " matches"
	if truncated {
		head += " (more matches available)"
	}
	out := []string{head}
	cur := ""
	for _, m := range matches {
		p := m.path
		if cur != p {
			if cur != "" {
				out = append(out, "")
			}
			cur = p
			out = append(out, p+":")
		}
		text := m.text
		if jsstr.Len(text) > 2000 {
			text = jsstr.Prefix(text, 2000) + "..."
		}
		out = append(out, "  Line "+strconv.Itoa(m.line)+": "+text)
	}
	if truncated {
		out = append(out, "", "(Results truncated. Consider using a more specific path or pattern.)")
	}
	r := result{output: strings.Join(out, "\n"), title: pattern}
	r.metadata = jobj{{"matches", len(matches)}, {"truncated", truncated}}
	return r, nil
}

// grepFallback searches without ripgrep, in name order; a line keeps its
// "\n" as ripgrep's JSON output does.
func grepFallback(dir, pattern, include string) ([]match, error) {
	var globs []string
	if include != "" {
		globs = []string{include}
	}
	res, err := run.Grep(run.GrepRequest{Pattern: pattern, Path: dir, Globs: globs, Mode: run.Content,
		WalkOptions: run.WalkOptions{Hidden: true}})
	if err != nil {
		if run.KindOf(err) == run.InvalidArgument {
			return nil, &regexError{err}
		}
		return nil, err
	}
	var out []match
	for _, f := range res.Files {
		content, _ := os.ReadFile(f.Path)
		for _, l := range f.Lines {
			text := l.Text
			if lineEndsWithNewline(content, l.Number) {
				text += "\n"
			}
			out = append(out, match{path: f.Rel, line: l.Number, text: text})
		}
	}
	return out, nil
}

type regexError struct{ err error }

func (e *regexError) Error() string { return "regex parse error:\n    " + e.err.Error() }

func lineEndsWithNewline(content []byte, n int) bool {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(content, '\n')
		if j < 0 {
			return false
		}
		content = content[j+1:]
	}
	return bytes.IndexByte(content, '\n') >= 0
}

// listIgnore are the directories older OpenCode's list tool leaves out.
var listIgnore = []string{"node_modules/", "__pycache__/", ".git/", "dist/", "build/", "target/", "vendor/", "bin/",
	"obj/", ".idea/", ".vscode/", ".zig-cache/", "zig-out", ".coverage", "coverage/", "vendor/", "tmp/", "temp/",
	".cache/", "cache/", "logs/", ".venv/", "venv/", "env/"}

// list is the directory-tree tool of OpenCode before 1.2: up to 100 files
// found by ripgrep, rendered as an indented tree, directories first.
func (s *session) list(ctx context.Context, args gjson.Result) (result, error) {
	root := s.cwd
	if p := args.Get("path"); p.Type == gjson.String && p.Str != "" {
		root = s.resolve(p.Str)
	}
	var globs []string
	for _, g := range listIgnore {
		globs = append(globs, "!"+g+"*")
	}
	for _, g := range args.Get("ignore").Array() {
		globs = append(globs, "!"+g.Str)
	}
	var files []string
	if s.rg != "" {
		rgArgs := []string{"--files", "--follow", "--hidden", "--glob=!.git/*"}
		for _, g := range globs {
			rgArgs = append(rgArgs, "--glob="+g)
		}
		out, _, _, err := s.rgOutput(ctx, root, rgArgs...)
		if err != nil {
			return result{}, err
		}
		for _, l := range strings.Split(string(out), "\n") {
			if l != "" && len(files) < searchLimit {
				files = append(files, rgPath(l))
			}
		}
	} else {
		res, err := run.List(root, run.ListOptions{Ignore: append([]string{".git/"}, listIgnore...),
			WalkOptions: run.WalkOptions{Hidden: true, FollowSymlinks: true}, Limit: searchLimit})
		if err != nil {
			return toolError(platformError("readDirectory", root, err)), nil
		}
		for _, e := range res.Entries {
			if !e.IsDir {
				files = append(files, e.Rel)
			}
		}
	}
	dirs := map[string]bool{}
	byDir := map[string][]string{}
	for _, f := range files {
		d := pathDir(f)
		parts := []string{}
		if d != "." {
			parts = strings.Split(d, "/")
		}
		for i := 0; i <= len(parts); i++ {
			if i == 0 {
				dirs["."] = true
			} else {
				dirs[strings.Join(parts[:i], "/")] = true
			}
		}
		byDir[d] = append(byDir[d], pathBase(f))
	}
	var render func(d string, depth int) string
	render = func(d string, depth int) string {
		var b strings.Builder
		if depth > 0 {
			b.WriteString(strings.Repeat("  ", depth) + pathBase(d) + "/\n")
		}
		var kids []string
		for k := range dirs {
			if k != d && pathDir(k) == d {
				kids = append(kids, k)
			}
		}
		sort.Strings(kids)
		for _, k := range kids {
			b.WriteString(render(k, depth+1))
		}
		fs := append([]string(nil), byDir[d]...)
		sort.Strings(fs)
		for _, f := range fs {
			b.WriteString(strings.Repeat("  ", depth+1) + f + "\n")
		}
		return b.String()
	}
	r := result{output: root + "/\n" + render(".", 0), title: s.rel(root)}
	r.metadata = jobj{{"count", len(files)}, {"truncated", len(files) >= searchLimit}}
	return r, nil
}

// pathDir and pathBase are Node's path.dirname/basename on "/" paths.
func pathDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "."
	}
	return p[:i]
}

func pathBase(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }
