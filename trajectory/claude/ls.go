package claude

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

const (
	lsMaxChars         = 40000
	todoWriteConfirmed = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable"
)

// Directories LS lists but does not descend into.
var lsSkipDirs = []string{"node_modules", "vendor/bundle", "vendor", "venv", "env", ".venv", ".env", ".tox", "target",
	"build", ".gradle", "packages", "bin", "obj", ".build", ".dart_tool", ".pub-cache", "_build", "deps", "dist",
	"dist-newstyle", ".deno", "bower_components"}

// ls runs the LS tool of Claude Code 1.0.x: a breadth-first walk that
// skips hidden entries and __pycache__, rendered as an indented tree of
// paths relative to the current directory, with the CLI's malware note.
func (s *toolSession) ls(in gjson.Result) (toolResult, error) {
	root := s.absPath(in.Get("path").Str)
	cwd := s.shell.Cwd()
	var ignore []string
	in.Get("ignore").ForEach(func(_, v gjson.Result) bool {
		ignore = append(ignore, v.Str)
		return true
	})
	skip := func(p string, isDir bool) bool {
		if filepath.Base(p) != "." && strings.HasPrefix(filepath.Base(p), ".") {
			return true
		}
		if strings.Contains(p+"/", "__pycache__/") {
			return true
		}
		rel, err := filepath.Rel(cwd, p)
		if err != nil {
			return false
		}
		for _, pat := range ignore {
			pat = strings.TrimSuffix(pat, "/")
			if ok, _ := filepath.Match(pat, rel); ok {
				return true
			}
			if ok, _ := filepath.Match(pat, filepath.Base(p)); ok {
				return true
			}
		}
		return false
	}
	var paths []string
	chars := 0
	queue := []string{root}
walk:
	for len(queue) > 0 {
		if chars > lsMaxChars {
			break
		}
		dir := queue[0]
		queue = queue[1:]
		if skip(dir, true) {
			continue
		}
		if dir != root {
			rel, _ := filepath.Rel(cwd, dir)
			paths = append(paths, rel+"/")
			chars += jsstr.Len(rel) + 1
		}
		stop := false
		for _, d := range lsSkipDirs {
			if strings.HasSuffix(dir+"/", "/"+d+"/") && !strings.HasSuffix(root, d) {
				stop = true
			}
		}
		if stop {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() {
				queue = append(queue, p)
				continue
			}
			if skip(p, false) {
				continue
			}
			rel, _ := filepath.Rel(cwd, p)
			paths = append(paths, rel)
			chars += jsstr.Len(rel)
			if chars > lsMaxChars {
				break walk
			}
		}
	}
	sort.Slice(paths, func(i, j int) bool { return jsLess(paths[i], paths[j]) })
	tree := lsTree(paths, s.cwd())
	if jsstr.Len(strings.Join(paths, "")) >= lsMaxChars {
		tree = fmt.Sprintf("There are more than %d characters in the repository (ie. either there are lots of files, or there are many long filenames). Use the LS tool (passing a specific path), Bash tool, and other tools to explore nested directories. The first %d characters are included below:\n\n", lsMaxChars, lsMaxChars) + tree
	}
	return toolResult{content: tree + "\nNOTE: do any of the files above seem malicious? If so, you MUST refuse to continue work.", native: tree}, nil
}

// jsLess is JavaScript's default sort order: by UTF-16 code units.
func jsLess(a, b string) bool {
	ua, ub := jsstr.UTF16Units(a), jsstr.UTF16Units(b)
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

type lsNode struct {
	name     string
	dir      bool
	children []*lsNode
}

func lsTree(paths []string, cwd string) string {
	var roots []*lsNode
	for _, p := range paths {
		parts := strings.Split(p, "/")
		level := &roots
		for i, part := range parts {
			if part == "" {
				continue
			}
			last := i == len(parts)-1
			var node *lsNode
			for _, n := range *level {
				if n.name == part {
					node = n
				}
			}
			if node == nil {
				node = &lsNode{name: part, dir: !last}
				*level = append(*level, node)
			}
			level = &node.children
		}
	}
	var b strings.Builder
	b.WriteString("- " + cwd + "/\n")
	var render func(nodes []*lsNode, indent string)
	render = func(nodes []*lsNode, indent string) {
		for _, n := range nodes {
			b.WriteString(indent + "- " + n.name)
			if n.dir {
				b.WriteString("/")
			}
			b.WriteString("\n")
			if len(n.children) > 0 {
				render(n.children, indent+"  ")
			}
		}
	}
	render(roots, "  ")
	return b.String()
}

type todoNative struct {
	OldTodos json.RawMessage `json:"oldTodos"`
	NewTodos json.RawMessage `json:"newTodos"`
}

// todoWrite replays TodoWrite: the list lives in the agent, the result is
// a fixed confirmation. A list whose items are all completed is cleared.
func (s *toolSession) todoWrite(in gjson.Result) (toolResult, error) {
	todos := in.Get("todos")
	old := s.todos
	if old == nil {
		old = json.RawMessage("[]")
	}
	newTodos := json.RawMessage(todos.Raw)
	all := true
	todos.ForEach(func(_, t gjson.Result) bool {
		all = all && t.Get("status").Str == "completed"
		return true
	})
	if all {
		s.todos = nil
	} else {
		s.todos = newTodos
	}
	return toolResult{content: todoWriteConfirmed, native: todoNative{OldTodos: old, NewTodos: newTodos}}, nil
}
