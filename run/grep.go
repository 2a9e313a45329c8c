package run

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"sort"
	"time"
)

// GrepMode is ripgrep's output mode, as Claude Code's Grep names them.
type GrepMode int

const (
	FilesWithMatches GrepMode = iota // rg -l: which files match (Claude's default)
	Content                          // matching lines, with context
	Count                            // rg -c: matching lines per file
)

// GrepRequest is a ripgrep-style search with Go regexp syntax (RE2, close
// to Rust's regex crate: no look-around, no backreferences).
type GrepRequest struct {
	Pattern string
	// Path is an absolute file or directory. A file is searched even if
	// hidden, ignored or filtered out, as ripgrep searches explicit paths.
	Path            string
	Globs           []string // rg --glob, gitignore syntax; "!x" excludes
	Types           []string // rg --type names (see FileTypes)
	CaseInsensitive bool     // rg -i
	FixedStrings    bool     // rg -F: Pattern is literal text
	Multiline       bool     // rg -U --multiline-dotall: matches may span lines, "." matches "\n"
	Before, After   int      // rg -B / -A context lines (Content mode); -C n sets both
	Mode            GrepMode
	WalkOptions
}

// GrepLine is one output line of a file: a matching line or a context line.
type GrepLine struct {
	Number int    // 1-based
	Text   string // without the "\n"; a CRLF file keeps its "\r"
	Match  bool   // false for context lines
}

// GrepFile holds one file's results.
type GrepFile struct {
	Path       string
	Rel        string // relative to the searched directory ("" for a file search)
	ModTime    time.Time
	MatchLines int        // lines with a match (rg -c)
	Matches    int        // individual matches (rg --count-matches)
	Lines      []GrepLine // Content mode only: in line order, context merged
	// Binary is set for an explicitly named file containing NUL bytes, which
	// is not searched line by line (ripgrep prints "binary file matches").
	Binary bool
}

// GrepResult lists matching files in walk order (by name, depth first);
// ripgrep's own order is unspecified, so formatters sort as their agent.
type GrepResult struct {
	Files []GrepFile
}

// FileTypes maps ripgrep --type names to file globs (a common subset of
// rg --type-list).
var FileTypes = map[string][]string{
	"c":          {"*.[chH]", "*.[chH].in", "*.cats"},
	"cpp":        {"*.[ChH]", "*.cc", "*.[ch]pp", "*.[ch]xx", "*.hh", "*.inl", "*.[ChH].in", "*.cc.in", "*.[ch]pp.in", "*.[ch]xx.in", "*.hh.in"},
	"cs":         {"*.cs"},
	"css":        {"*.css", "*.scss"},
	"csv":        {"*.csv"},
	"dart":       {"*.dart"},
	"docker":     {"*Dockerfile*"},
	"go":         {"*.go"},
	"h":          {"*.h", "*.hh", "*.hpp"},
	"html":       {"*.htm", "*.html", "*.ejs"},
	"java":       {"*.java", "*.jsp", "*.jspx", "*.properties"},
	"js":         {"*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs"},
	"json":       {"*.json", "composer.lock", "*.sarif"},
	"jsonl":      {"*.jsonl"},
	"kotlin":     {"*.kt", "*.kts"},
	"lua":        {"*.lua"},
	"make":       {"[Gg][Nn][Uu]makefile", "[Mm]akefile", "[Gg][Nn][Uu]makefile.am", "[Mm]akefile.am", "[Gg][Nn][Uu]makefile.in", "[Mm]akefile.in", "*.mk", "*.mak"},
	"markdown":   {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"md":         {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"php":        {"*.php", "*.php3", "*.php4", "*.php5", "*.phtml"},
	"proto":      {"*.proto"},
	"py":         {"*.py", "*.pyi"},
	"python":     {"*.py", "*.pyi"},
	"rb":         {"Gemfile", "*.gemspec", ".irbrc", "Rakefile", "*.rb"},
	"ruby":       {"Gemfile", "*.gemspec", ".irbrc", "Rakefile", "*.rb"},
	"rs":         {"*.rs"},
	"rust":       {"*.rs"},
	"scala":      {"*.scala", "*.sbt"},
	"sh":         {"*.bash", "*.bashrc", ".bash_*", ".bashrc", ".profile", "*.sh", "*.zsh", ".zshrc", ".zprofile", ".zshenv", ".zlogin", ".zlogout"},
	"sql":        {"*.sql", "*.psql"},
	"svelte":     {"*.svelte"},
	"swift":      {"*.swift"},
	"toml":       {"*.toml", "Cargo.lock"},
	"ts":         {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"typescript": {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"txt":        {"*.txt"},
	"vue":        {"*.vue"},
	"xml":        {"*.xml", "*.xml.dist", "*.dtd", "*.xsl", "*.xslt", "*.xsd", "*.xjb", "*.rng", "*.sch", "*.xhtml"},
	"yaml":       {"*.yaml", "*.yml"},
}

// grepHere searches req.Path. A bad pattern or unknown type fails with Kind
// InvalidArgument; no match is an empty result, not an error.
func grepHere(req GrepRequest) (GrepResult, error) {
	var res GrepResult
	if err := checkAbs("grep", req.Path); err != nil {
		return res, err
	}
	fi, err := os.Stat(req.Path)
	if err != nil {
		return res, fsErr("grep", req.Path, err)
	}
	lineRe, fileRe, err := compileGrep(req)
	if err != nil {
		return res, newErr("grep", req.Path, InvalidArgument, err)
	}
	var types []segPattern
	for _, t := range req.Types {
		globs, ok := FileTypes[t]
		if !ok {
			return res, newErr("grep", req.Path, InvalidArgument, errors.New("unrecognized file type: "+t))
		}
		for _, g := range globs {
			alts, err := compileSegs(g)
			if err != nil {
				return res, newErr("grep", req.Path, InvalidArgument, err)
			}
			types = append(types, alts...)
		}
	}
	if !fi.IsDir() {
		if gf, ok := grepFile(req, lineRe, fileRe, req.Path, "", fi.ModTime(), true); ok {
			res.Files = append(res.Files, gf)
		}
		return res, nil
	}
	w, err := newWalker(req.Path, req.WalkOptions, req.Globs, types)
	if err != nil {
		return res, newErr("grep", req.Path, InvalidArgument, err)
	}
	w.walk(req.Path, func(e FileEntry) bool {
		if !e.IsDir {
			if gf, ok := grepFile(req, lineRe, fileRe, e.Path, e.Rel, e.ModTime, false); ok {
				res.Files = append(res.Files, gf)
			}
		}
		return true
	})
	return res, nil
}

// compileGrep returns the per-line regexp and a whole-file one: in line
// mode the latter (with (?m)) is a cheap filter that can only over-match,
// in multiline mode it is the search itself.
func compileGrep(req GrepRequest) (line, file *regexp.Regexp, err error) {
	pat := req.Pattern
	if req.FixedStrings {
		pat = regexp.QuoteMeta(pat)
	}
	flags := ""
	if req.CaseInsensitive {
		flags += "i"
	}
	if req.Multiline {
		file, err = regexp.Compile("(?ms" + flags + ")" + pat)
		return nil, file, err
	}
	if flags != "" {
		pat = "(?" + flags + ")" + pat
	}
	if line, err = regexp.Compile(pat); err != nil {
		return nil, nil, err
	}
	file, err = regexp.Compile("(?m)" + pat)
	return line, file, err
}

func grepFile(req GrepRequest, lineRe, fileRe *regexp.Regexp, path, rel string, mtime time.Time, explicit bool) (GrepFile, bool) {
	content, err := os.ReadFile(path)
	if err != nil || len(content) == 0 || !fileRe.Match(content) {
		return GrepFile{}, false
	}
	gf := GrepFile{Path: path, Rel: rel, ModTime: mtime}
	if bytes.IndexByte(content, 0) >= 0 {
		if !explicit {
			return GrepFile{}, false // ripgrep skips binary files it finds by walking
		}
		gf.Binary = true
		return gf, true
	}
	starts := lineStarts(content)
	matched := map[int]bool{} // 0-based line indexes with a match
	if lineRe == nil {
		for _, m := range fileRe.FindAllIndex(content, -1) {
			gf.Matches++
			first, last := lineIndex(starts, m[0]), lineIndex(starts, max(m[0], m[1]-1))
			for l := first; l <= last; l++ {
				matched[l] = true
			}
			if req.Mode == FilesWithMatches {
				break
			}
		}
	} else {
		for l := range starts {
			n := len(lineRe.FindAllIndex(lineText(content, starts, l), -1))
			if n == 0 {
				continue
			}
			matched[l] = true
			gf.Matches += n
			if req.Mode == FilesWithMatches {
				break
			}
		}
	}
	if len(matched) == 0 {
		return GrepFile{}, false
	}
	gf.MatchLines = len(matched)
	if req.Mode == Content {
		gf.Lines = contextLines(content, starts, matched, req.Before, req.After)
	}
	return gf, true
}

// lineStarts returns the offset of every line; a final "\n" does not start
// another line, as ripgrep never reports the empty remainder.
func lineStarts(content []byte) []int {
	starts := []int{0}
	for i, c := range content {
		if c == '\n' && i+1 < len(content) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func lineIndex(starts []int, off int) int {
	return sort.SearchInts(starts, off+1) - 1
}

func lineText(content []byte, starts []int, l int) []byte {
	end := len(content)
	if l+1 < len(starts) {
		end = starts[l+1]
	}
	return bytes.TrimSuffix(content[starts[l]:end], []byte{'\n'})
}

func contextLines(content []byte, starts []int, matched map[int]bool, before, after int) []GrepLine {
	idx := make([]int, 0, len(matched))
	for l := range matched {
		idx = append(idx, l)
	}
	sort.Ints(idx)
	var out []GrepLine
	next := 0 // first line not yet emitted
	for _, l := range idx {
		from := max(l-before, next)
		to := min(l+after, len(starts)-1)
		for i := from; i <= to; i++ {
			if i < next {
				continue
			}
			out = append(out, GrepLine{Number: i + 1, Text: string(lineText(content, starts, i)), Match: matched[i]})
			next = i + 1
		}
	}
	return out
}
