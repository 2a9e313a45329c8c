package openhands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// editor re-implements OpenHands' file editor (openhands-tools
// file_editor, ported from openhands-aci's str_replace_editor that V0's
// `edit`/`read` actions with impl_source oh_aci used): the same commands,
// the same result texts, the same per-file undo history (ten entries).
// Files are read as Python's text mode reads them (universal newlines) and
// must be UTF-8; OpenHands' charset detection is not re-implemented, so a
// file in another encoding is an error here.
type editor struct {
	history map[string][]string
}

// Editor limits and texts (openhands/tools/file_editor/utils).
const (
	snippetContext   = 4
	maxResponseChars = 16000
	maxHistory       = 10
	maxFileBytes     = 10 << 20
)

// toolError is a failure OpenHands reports to the model as an error result.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func invalidParam(param, value, hint string) error {
	if hint == "" {
		return &toolError{fmt.Sprintf("Invalid `%s` parameter: %s.", param, value)}
	}
	return &toolError{fmt.Sprintf("Invalid `%s` parameter: %s. %s", param, value, hint)}
}

// editArgs are FileEditorAction's fields (V0 edit args share the names).
type editArgs struct {
	Command    string  `json:"command"`
	Path       string  `json:"path"`
	FileText   *string `json:"file_text"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	ViewRange  []int   `json:"view_range"`
}

// run executes one command; a *toolError is the model-visible error text.
func (ed *editor) run(a editArgs, cwd string) (string, error) {
	path := a.Path
	if err := validatePath(a.Command, path, cwd); err != nil {
		return "", err
	}
	switch a.Command {
	case "view":
		return ed.view(path, a.ViewRange)
	case "create":
		if a.FileText == nil {
			return "", missingParam(a.Command, "file_text")
		}
		if err := writeText(path, *a.FileText); err != nil {
			return "", err
		}
		ed.push(path, *a.FileText)
		return "File created successfully at: " + path, nil
	case "str_replace":
		if a.OldStr == nil {
			return "", missingParam(a.Command, "old_str")
		}
		if a.NewStr == nil {
			return "", missingParam(a.Command, "new_str")
		}
		if *a.NewStr == *a.OldStr {
			return "", invalidParam("new_str", *a.NewStr, "No replacement was performed. `new_str` and `old_str` must be different.")
		}
		return ed.strReplace(path, *a.OldStr, *a.NewStr)
	case "insert":
		if a.InsertLine == nil {
			return "", missingParam(a.Command, "insert_line")
		}
		if a.NewStr == nil {
			return "", missingParam(a.Command, "new_str")
		}
		return ed.insert(path, *a.InsertLine, *a.NewStr)
	case "undo_edit":
		return ed.undo(path)
	}
	return "", &toolError{fmt.Sprintf("Unrecognized command %s. The allowed commands for FileEditor tool are: view, create, str_replace, insert, undo_edit", a.Command)}
}

func missingParam(command, param string) error {
	return &toolError{fmt.Sprintf("Parameter `%s` is required for command: %s.", param, command)}
}

func validatePath(command, path, cwd string) error {
	if !filepath.IsAbs(path) {
		msg := "The path should be an absolute path."
		if cwd != "" {
			if s := filepath.Join(cwd, path); exists(s) {
				msg += " Maybe you meant " + s + "?"
			}
		}
		return invalidParam("path", path, msg)
	}
	st, err := os.Stat(path)
	switch {
	case command == "create" && err == nil:
		return invalidParam("path", path, "File already exists at: "+path+". Cannot overwrite files using command `create`.")
	case command != "create" && err != nil:
		return invalidParam("path", path, "The path "+path+" does not exist. Please provide a valid path.")
	case command != "view" && err == nil && st.IsDir():
		return invalidParam("path", path, "The path "+path+" is a directory and only the `view` command can be used on directories.")
	}
	return nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// readText reads a file as Python's text mode does: \r\n and \r become \n.
func readText(path string) (string, error) {
	st, err := os.Stat(path)
	if err == nil && st.Mode().IsRegular() && st.Size() > maxFileBytes {
		return "", &toolError{fmt.Sprintf("File validation failed for %s: File is too large (%.1fMB). Maximum allowed size is %dMB.",
			path, float64(st.Size())/1024/1024, maxFileBytes>>20)}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", &toolError{fmt.Sprintf("Ran into %v while trying to read %s", err, path)}
	}
	if !utf8.Valid(b) {
		return "", &toolError{fmt.Sprintf("File validation failed for %s: File appears to be binary and this file type cannot be read or edited by this tool.", path)}
	}
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n"), nil
}

// writeText replaces the file's content, keeping its mode, as OpenHands'
// atomic write (a temporary file renamed over it) does.
func writeText(path, text string) error {
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return &toolError{fmt.Sprintf("Ran into %v while trying to write to %s", err, path)}
	}
	_, werr := tmp.WriteString(text)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode), os.Rename(tmp.Name(), path)); err != nil {
		os.Remove(tmp.Name())
		return &toolError{fmt.Sprintf("Ran into %v while trying to write to %s", err, path)}
	}
	return nil
}

// lines splits text as Python iterates a text file: each line keeps its
// newline, the last may have none.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	out := strings.SplitAfter(text, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// slice is lines start..end (1-based, inclusive) joined.
func slice(text string, start, end int) string {
	ls := lines(text)
	var b strings.Builder
	for i, l := range ls {
		if n := i + 1; n >= start && n <= end {
			b.WriteString(l)
		}
	}
	return b.String()
}

func (ed *editor) push(path, text string) {
	if ed.history == nil {
		ed.history = map[string][]string{}
	}
	h := append(ed.history[path], text)
	if len(h) > maxHistory {
		h = h[len(h)-maxHistory:]
	}
	ed.history[path] = h
}

func (ed *editor) view(path string, viewRange []int) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", invalidParam("path", path, "The path "+path+" does not exist. Please provide a valid path.")
	}
	if st.IsDir() {
		if len(viewRange) > 0 {
			return "", invalidParam("view_range", pyList(viewRange), "The `view_range` parameter is not allowed when `path` points to a directory.")
		}
		return viewDir(path)
	}
	text, err := readText(path)
	if err != nil {
		return "", err
	}
	if len(viewRange) == 0 {
		return makeOutput(text, path, 1), nil
	}
	n := len(lines(text))
	if len(viewRange) != 2 {
		return "", invalidParam("view_range", pyList(viewRange), "It should be a list of two integers.")
	}
	start, end := viewRange[0], viewRange[1]
	if start < 1 || start > n {
		return "", invalidParam("view_range", pyList(viewRange),
			fmt.Sprintf("Its first element `%d` should be within the range of lines of the file: [1, %d].", start, n))
	}
	warning := ""
	switch {
	case end == -1:
		end = n
	case end > n:
		warning = fmt.Sprintf("We only show up to %d since there're only %d lines in this file.", n, n)
		end = n
	}
	if end < start {
		return "", invalidParam("view_range", pyList(viewRange),
			fmt.Sprintf("Its second element `%d` should be greater than or equal to the first element `%d`.", end, start))
	}
	out := makeOutput(slice(text, start, end), path, start)
	if warning != "" {
		out = "NOTE: " + warning + "\n" + out
	}
	return out, nil
}

// viewDir lists two levels, hidden entries excluded, sorted by path.
func viewDir(path string) (string, error) {
	entries, err := os.ReadDir(path)
	if err != nil {
		return "", &toolError{err.Error()}
	}
	root := strings.TrimSuffix(path, "/")
	if root == "" {
		root = "/"
	}
	out := []string{root + "/"}
	hidden := 0
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			hidden++
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(path, name)
		out = append(out, dirEntry(root, name, p))
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			kids, err := os.ReadDir(p)
			if err != nil {
				continue
			}
			var kn []string
			for _, k := range kids {
				if !strings.HasPrefix(k.Name(), ".") {
					kn = append(kn, k.Name())
				}
			}
			sort.Strings(kn)
			for _, k := range kn {
				out = append(out, dirEntry(root, name+"/"+k, filepath.Join(p, k)))
			}
		}
	}
	msg := "Here's the files and directories up to 2 levels deep in " + path + ", excluding hidden items:\n" + strings.Join(out, "\n")
	if hidden > 0 {
		msg += fmt.Sprintf("\n\n%d hidden files/directories in this directory are excluded. You can use 'ls -la %s' to see them.", hidden, path)
	}
	return maybeTruncate(msg, maxResponseChars, noticeDirectory), nil
}

func dirEntry(root, rel, p string) string {
	d := root + "/" + rel
	if root == "/" {
		d = "/" + rel
	}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return d + "/"
	}
	return d
}

// makeOutput numbers the lines as `cat -n` does, from start.
func makeOutput(content, what string, start int) string {
	content = maybeTruncate(content, maxResponseChars, noticeTextFile)
	ls := strings.Split(content, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	var b strings.Builder
	b.WriteString("Here's the result of running `cat -n` on " + what + ":\n")
	for i, l := range ls {
		fmt.Fprintf(&b, "%6d\t%s\n", i+start, l)
	}
	return b.String()
}

func (ed *editor) strReplace(path, oldStr, newStr string) (string, error) {
	text, err := readText(path)
	if err != nil {
		return "", err
	}
	idx := allIndex(text, oldStr)
	if len(idx) == 0 {
		oldStr = pyStrip(oldStr)
		idx = allIndex(text, oldStr)
		if len(idx) == 0 {
			return "", &toolError{fmt.Sprintf("No replacement was performed, old_str `%s` did not appear verbatim in %s.", oldStr, path)}
		}
	}
	if len(idx) > 1 {
		seen := map[int]bool{}
		var ls []int
		for _, i := range idx {
			if l := strings.Count(text[:i], "\n") + 1; !seen[l] {
				seen[l] = true
				ls = append(ls, l)
			}
		}
		sort.Ints(ls)
		return "", &toolError{fmt.Sprintf("No replacement was performed. Multiple occurrences of old_str `%s` in lines %s. Please ensure it is unique.", oldStr, pyList(ls))}
	}
	i := idx[0]
	line := strings.Count(text[:i], "\n") + 1
	updated := text[:i] + newStr + text[i+len(oldStr):]
	if err := writeText(path, updated); err != nil {
		return "", err
	}
	ed.push(path, text)
	start := max(0, line-snippetContext)
	end := line + snippetContext + strings.Count(newStr, "\n")
	return "The file " + path + " has been edited. " + makeOutput(slice(updated, start+1, end), "a snippet of "+path, start+1) +
		"Review the changes and make sure they are as expected. Edit the file again if necessary.", nil
}

// allIndex is where sub occurs in s, without overlaps (re.finditer).
func allIndex(s, sub string) []int {
	var out []int
	if sub == "" {
		for i := 0; i <= len(s); i++ {
			out = append(out, i)
		}
		return out
	}
	for off := 0; ; {
		j := strings.Index(s[off:], sub)
		if j < 0 {
			return out
		}
		out = append(out, off+j)
		off += j + len(sub)
	}
}

func (ed *editor) insert(path string, at int, newStr string) (string, error) {
	text, err := readText(path)
	if err != nil {
		return "", err
	}
	old := lines(text)
	n := len(old)
	if at < 0 || at > n {
		return "", invalidParam("insert_line", strconv.Itoa(at), fmt.Sprintf("It should be within the range of allowed values: [0, %d]", n))
	}
	ins := strings.Split(newStr, "\n")
	var b strings.Builder
	for _, l := range old[:at] {
		b.WriteString(l)
	}
	for _, l := range ins {
		b.WriteString(l + "\n")
	}
	for _, l := range old[at:] {
		b.WriteString(l)
	}
	updated := b.String()
	if err := writeText(path, updated); err != nil {
		return "", err
	}
	start := max(0, at-snippetContext)
	end := min(n+len(ins), at+snippetContext+len(ins))
	ed.push(path, text)
	return "The file " + path + " has been edited. " + makeOutput(slice(updated, start+1, end), "a snippet of the edited file", max(1, at-snippetContext+1)) +
		"Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.", nil
}

func (ed *editor) undo(path string) (string, error) {
	if _, err := readText(path); err != nil {
		return "", err
	}
	h := ed.history[path]
	if len(h) == 0 {
		return "", &toolError{"No edit history found for " + path + "."}
	}
	prev := h[len(h)-1]
	ed.history[path] = h[:len(h)-1]
	if err := writeText(path, prev); err != nil {
		return "", err
	}
	return "Last edit to " + path + " undone successfully. " + makeOutput(prev, path, 1), nil
}

// pyList formats ints as Python prints a list.
func pyList(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// pyStrip is str.strip(): ASCII whitespace and the Unicode spaces.
func pyStrip(s string) string { return strings.TrimSpace(s) }
