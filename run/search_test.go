package run

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// searchTree is a small repository with the cases ripgrep treats specially:
// hidden files and directories, .gitignore (root and nested), .ignore,
// negation, a binary file, a symlink, CRLF lines.
func searchTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		".git/HEAD":              "ref: refs/heads/main\n",
		".gitignore":             "node_modules/\n*.log\n/build\n!keep.log\n",
		".dot.go":                "package dot // TODO hidden\n",
		"main.go":                "package main\n\nfunc main() {\n\t// TODO: first\n\tprintln(\"hi\")\n}\n",
		"util.go":                "package main\n\n// todo lower\nfunc util() {}\n",
		"app.ts":                 "const a = 1; // TODO ts\nexport {}\n",
		"view.tsx":               "export const V = () => null // TODO tsx\n",
		"notes.md":               "# Notes\nTODO one\nmiddle\nTODO two\n\nend\nTODO three\n",
		"crlf.txt":               "TODO crlf\r\nnext\r\n",
		"debug.log":              "TODO ignored log\n",
		"keep.log":               "TODO kept log\n",
		"bin.dat":                "TODO\x00binary\n",
		"build/out.go":           "package out // TODO build\n",
		"src/build/in.go":        "package in // TODO nested build dir is not /build\n",
		"node_modules/m/i.js":    "// TODO dep\n",
		"src/a/deep.go":          "package a\n// TODO deep\n",
		"src/a/.hidden/h.go":     "package h // TODO\n",
		"src/.gitignore":         "gen_*.go\n",
		"src/gen_x.go":           "package src // TODO generated\n",
		"src/.ignore":            "secret.txt\n",
		"src/secret.txt":         "TODO secret\n",
		"docs/guide.md":          "Guide\nTODO doc\n",
		"docs/multi.txt":         "start\nfoo\nbar\nend\n",
		"empty.txt":              "",
		"spaces in name/f.txt":   "TODO spaced\n",
		"src/a/b/c/very_deep.go": "package c\n",
	})
	if err := os.Symlink(filepath.Join(root, "main.go"), filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	// Distinct, increasing mtimes for the sort tests.
	base := time.Now().Add(-time.Hour)
	for i, rel := range []string{"util.go", "main.go", "app.ts"} {
		ts := base.Add(time.Duration(i) * time.Minute)
		os.Chtimes(filepath.Join(root, rel), ts, ts)
	}
	return root
}

func rels(files []FileEntry) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Rel)
	}
	return out
}

func TestGlob(t *testing.T) {
	root := searchTree(t)
	tests := []struct {
		pattern string
		opt     GlobOptions
		want    []string
	}{
		{"*.go", GlobOptions{}, []string{".dot.go", "main.go", "src/a/b/c/very_deep.go", "src/a/deep.go", "src/build/in.go", "src/gen_x.go", "util.go"}},
		{"*.go", GlobOptions{Anchored: true}, []string{"main.go", "util.go"}},
		{"**/*.go", GlobOptions{Anchored: true}, []string{"main.go", "src/a/b/c/very_deep.go", "src/a/deep.go", "src/build/in.go", "util.go"}},
		{"src/**/*.go", GlobOptions{}, []string{"src/a/b/c/very_deep.go", "src/a/deep.go", "src/build/in.go", "src/gen_x.go"}},
		{"**/*.{ts,tsx}", GlobOptions{}, []string{"app.ts", "view.tsx"}},
		{"*.log", GlobOptions{}, []string{"debug.log", "keep.log"}},
		{"**/*.go", GlobOptions{Anchored: true, WalkOptions: WalkOptions{Hidden: true}}, []string{".dot.go", "main.go", "src/a/.hidden/h.go", "src/a/b/c/very_deep.go", "src/a/deep.go", "src/build/in.go", "util.go"}},
		{"**/*.go", GlobOptions{Anchored: true, WalkOptions: WalkOptions{NoIgnore: true, FollowSymlinks: true}}, []string{"build/out.go", "link.go", "main.go", "src/a/b/c/very_deep.go", "src/a/deep.go", "src/build/in.go", "src/gen_x.go", "util.go"}},
		{"src/a/*", GlobOptions{Anchored: true}, []string{"src/a/deep.go"}},
		{"src/a/*", GlobOptions{Anchored: true, IncludeDirs: true}, []string{"src/a/b", "src/a/deep.go"}},
		{"[mu]*.go", GlobOptions{Anchored: true}, []string{"main.go", "util.go"}},
		{"[!m]*.go", GlobOptions{Anchored: true}, []string{"util.go"}},
		{filepath.Join(root, "src", "a", "**", "*.go"), GlobOptions{}, []string{"b/c/very_deep.go", "deep.go"}},
		{"*.go", GlobOptions{Limit: 2}, []string{".dot.go", "main.go"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %+v", tt.pattern, tt.opt), func(t *testing.T) {
			res, err := Glob(root, tt.pattern, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, rels(res.Files)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if res.Truncated != (tt.opt.Limit > 0) {
				t.Errorf("Truncated = %v", res.Truncated)
			}
		})
	}
	if _, err := Glob(filepath.Join(root, "nope"), "*", GlobOptions{}); KindOf(err) != NotFound {
		t.Errorf("missing root: %v", err)
	}
	if _, err := Glob(filepath.Join(root, "main.go"), "*", GlobOptions{}); KindOf(err) != NotDir {
		t.Errorf("file root: %v", err)
	}
	if _, err := Glob(root, "[", GlobOptions{Anchored: true}); KindOf(err) != InvalidArgument {
		t.Errorf("bad pattern: %v", err)
	}
}

func TestSortByModTime(t *testing.T) {
	root := searchTree(t)
	res, err := Glob(root, "*.{go,ts}", GlobOptions{Anchored: true})
	if err != nil {
		t.Fatal(err)
	}
	SortByModTime(res.Files, true)
	if d := cmp.Diff([]string{"app.ts", "main.go", "util.go"}, rels(res.Files)); d != "" {
		t.Errorf("newest first (-want +got):\n%s", d)
	}
	SortByModTime(res.Files, false)
	if d := cmp.Diff([]string{"util.go", "main.go", "app.ts"}, rels(res.Files)); d != "" {
		t.Errorf("oldest first (-want +got):\n%s", d)
	}
}

// formatRg renders results the way `rg --no-heading -n --sort path` does,
// so they can be compared with the real ripgrep.
func formatRg(res GrepResult, mode GrepMode) string {
	var b strings.Builder
	for _, f := range res.Files {
		switch mode {
		case FilesWithMatches:
			fmt.Fprintf(&b, "%s\n", f.Rel)
		case Count:
			fmt.Fprintf(&b, "%s:%d\n", f.Rel, f.MatchLines)
		case Content:
			prev := 0
			for _, l := range f.Lines {
				if prev != 0 && l.Number != prev+1 {
					b.WriteString("--\n")
				}
				sep := "-"
				if l.Match {
					sep = ":"
				}
				fmt.Fprintf(&b, "%s%s%d%s%s\n", f.Rel, sep, l.Number, sep, l.Text)
				prev = l.Number
			}
		}
	}
	return b.String()
}

func TestGrep(t *testing.T) {
	root := searchTree(t)
	tests := []struct {
		name string
		req  GrepRequest
		want string
		rg   []string // equivalent ripgrep arguments
	}{
		{"files", GrepRequest{Pattern: "TODO"},
			"app.ts\ncrlf.txt\ndocs/guide.md\nkeep.log\nmain.go\nnotes.md\nspaces in name/f.txt\nsrc/a/deep.go\nsrc/build/in.go\nview.tsx\n",
			[]string{"-l", "TODO"}},
		{"case insensitive count", GrepRequest{Pattern: "todo", CaseInsensitive: true, Mode: Count, Types: []string{"go"}},
			".dot.go:1\nmain.go:1\nsrc/a/deep.go:1\nsrc/build/in.go:1\nutil.go:1\n",
			[]string{"-c", "-i", "-t", "go", "todo"}},
		{"glob filter", GrepRequest{Pattern: "TODO", Globs: []string{"*.{ts,tsx}"}},
			"app.ts\nview.tsx\n",
			[]string{"-l", "--glob", "*.{ts,tsx}", "TODO"}},
		{"negated glob", GrepRequest{Pattern: "TODO", Globs: []string{"!*.go", "!*.md"}},
			"app.ts\ncrlf.txt\nkeep.log\nspaces in name/f.txt\nview.tsx\n",
			[]string{"-l", "--glob", "!*.go", "--glob", "!*.md", "TODO"}},
		{"content with context", GrepRequest{Pattern: "^TODO", Mode: Content, Before: 1, After: 1, Globs: []string{"notes.md"}},
			"notes.md-1-# Notes\nnotes.md:2:TODO one\nnotes.md-3-middle\nnotes.md:4:TODO two\nnotes.md-5-\nnotes.md-6-end\nnotes.md:7:TODO three\n",
			[]string{"-n", "-B1", "-A1", "--glob", "notes.md", "^TODO"}},
		{"crlf line keeps its CR", GrepRequest{Pattern: "crlf", Mode: Content},
			"crlf.txt:1:TODO crlf\r\n",
			[]string{"-n", "crlf"}},
		{"multiline", GrepRequest{Pattern: "foo.bar", Multiline: true, Mode: Content},
			"docs/multi.txt:2:foo\ndocs/multi.txt:3:bar\n",
			[]string{"-n", "-U", "--multiline-dotall", "foo.bar"}},
		{"hidden and no-ignore", GrepRequest{Pattern: "TODO (hidden|ignored|dep|secret|generated)", WalkOptions: WalkOptions{Hidden: true, NoIgnore: true}},
			".dot.go\ndebug.log\nnode_modules/m/i.js\nsrc/gen_x.go\nsrc/secret.txt\n",
			[]string{"-l", "--hidden", "--no-ignore", "--glob", "!.git", "TODO (hidden|ignored|dep|secret|generated)"}},
		{"fixed strings", GrepRequest{Pattern: "println(\"", FixedStrings: true, Mode: Content},
			"main.go:5:\tprintln(\"hi\")\n",
			[]string{"-n", "-F", "println(\""}},
	}
	_, rgErr := exec.LookPath("rg")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Path = root
			res, err := Grep(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, formatRg(res, tt.req.Mode)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if rgErr != nil {
				return
			}
			// The expectations above must be what ripgrep itself prints.
			cmd := exec.Command("rg", append([]string{"--no-heading", "--color", "never", "--sort", "path"}, tt.rg...)...)
			cmd.Dir = root
			out, _ := cmd.Output()
			if d := cmp.Diff(tt.want, string(out)); d != "" {
				t.Errorf("ripgrep disagrees with the expectation (-want +rg):\n%s", d)
			}
		})
	}
}

func TestGrepSingleFileAndErrors(t *testing.T) {
	root := searchTree(t)
	// An explicit path is searched even though .gitignore excludes it.
	res, err := Grep(GrepRequest{Pattern: "TODO", Path: filepath.Join(root, "debug.log"), Mode: Content})
	if err != nil || len(res.Files) != 1 || res.Files[0].Lines[0].Text != "TODO ignored log" {
		t.Fatalf("explicit ignored file: %+v %v", res, err)
	}
	res, err = Grep(GrepRequest{Pattern: "TODO", Path: filepath.Join(root, "bin.dat")})
	if err != nil || len(res.Files) != 1 || !res.Files[0].Binary {
		t.Errorf("explicit binary file: %+v %v", res, err)
	}
	res, err = Grep(GrepRequest{Pattern: "no such text anywhere", Path: root})
	if err != nil || len(res.Files) != 0 {
		t.Errorf("no match: %+v %v", res, err)
	}
	errs := []struct {
		req  GrepRequest
		kind Kind
	}{
		{GrepRequest{Pattern: "(", Path: root}, InvalidArgument},
		{GrepRequest{Pattern: "x", Path: root, Types: []string{"nosuchtype"}}, InvalidArgument},
		{GrepRequest{Pattern: "x", Path: filepath.Join(root, "missing")}, NotFound},
		{GrepRequest{Pattern: "x", Path: "relative"}, NotAbsolute},
	}
	for _, e := range errs {
		if _, err := Grep(e.req); KindOf(err) != e.kind {
			t.Errorf("%+v: %v, want %v", e.req, err, e.kind)
		}
	}
}

func TestGlobMatchesRipgrep(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg not installed")
	}
	root := searchTree(t)
	for _, p := range []string{"*.go", "src/**/*.go", "**/*.{ts,tsx}", "*.log", "**/a/*", "docs/*"} {
		res, err := Glob(root, p, GlobOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("rg", "--files", "--sort", "path", "--glob", p)
		cmd.Dir = root
		out, _ := cmd.Output()
		want := strings.Fields(strings.ReplaceAll(string(out), "spaces in name", "spaces_in_name"))
		got := rels(res.Files)
		for i := range got {
			got[i] = strings.ReplaceAll(got[i], "spaces in name", "spaces_in_name")
		}
		sort.Strings(want)
		sort.Strings(got)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Glob(%q) vs rg --files --glob (-rg +ours):\n%s", p, d)
		}
	}
}

func TestList(t *testing.T) {
	root := searchTree(t)
	res, err := List(root, ListOptions{Ignore: []string{"src/", "docs/"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"app.ts", "bin.dat", "crlf.txt", "empty.txt", "keep.log", "main.go", "notes.md", "spaces in name", "spaces in name/f.txt", "util.go", "view.tsx"}
	if d := cmp.Diff(want, rels(res.Entries)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	res, err = List(root, ListOptions{Limit: 3, MaxDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"app.ts", "bin.dat", "crlf.txt", "docs"}, rels(res.Entries)); d != "" || !res.Truncated {
		t.Errorf("limit/depth: Truncated=%v (-want +got):\n%s", res.Truncated, d)
	}
}
