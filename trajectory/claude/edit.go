package claude

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"sync"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

type editNative struct {
	FilePath        string `json:"filePath"`
	OldString       string `json:"oldString"`
	NewString       string `json:"newString"`
	OriginalFile    string `json:"originalFile"`
	StructuredPatch []hunk `json:"structuredPatch"`
	UserModified    bool   `json:"userModified"`
	ReplaceAll      bool   `json:"replaceAll"`
}

type multiEditNative struct {
	FilePath             string     `json:"filePath"`
	Edits                []editSpec `json:"edits"`
	OriginalFileContents string     `json:"originalFileContents"`
	StructuredPatch      []hunk     `json:"structuredPatch"`
	UserModified         bool       `json:"userModified"`
}

type editSpec struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// target is a file as the Edit tools see it before editing.
type target struct {
	name    string // the path as the call gave it
	path    string // in the workspace
	exists  bool
	content string // with CRLF line ends turned into LF
	crlf    bool
}

func (s *toolSession) edit(in gjson.Result) (toolResult, error) {
	e := editSpec{in.Get("old_string").Str, in.Get("new_string").Str, in.Get("replace_all").Bool()}
	t, rej, err := s.loadTarget(in.Get("file_path").Str)
	if err != nil || rej != nil {
		return deref(rej), err
	}
	actual, rej := s.checkEdit(t, e)
	if rej != nil {
		return *rej, nil
	}
	newString := e.NewString
	if actual != e.OldString {
		newString = curlQuotes(actual, newString)
	}
	updated := newString
	if t.exists && e.OldString != "" {
		updated = applyEdit(t.content, actual, newString, e.ReplaceAll)
	}
	if updated == t.content && t.exists {
		return thrown("Original and edited file match exactly. Failed to apply edit."), nil
	}
	if err := s.save(t, updated); err != nil {
		return toolResult{}, err
	}
	nat := editNative{FilePath: t.name, OldString: actual, NewString: e.NewString, OriginalFile: t.content,
		StructuredPatch: structuredPatch(leadingTabs(t.content), leadingTabs(updated)), ReplaceAll: e.ReplaceAll}
	res := toolResult{native: nat}
	note := ""
	if s.style.is(s.style.note, true) {
		note = stateNote
	}
	snippet := s.style.is(s.style.editSnippet, false)
	switch {
	case e.ReplaceAll && snippet:
		res.content = fmt.Sprintf("The file %s has been updated. All occurrences of '%s' were successfully replaced with '%s'.", t.name, actual, e.NewString)
	case e.ReplaceAll:
		res.content = "The file " + t.name + " has been updated. All occurrences were successfully replaced." + note
	case snippet:
		text, first := editSnippet(t.content, actual, e.NewString)
		res.content = "The file " + t.name + " has been updated." + snippetIntro + "\n" + s.numbered(text, first)
	default:
		res.content = "The file " + t.name + " has been updated successfully." + note
	}
	return res, nil
}

func (s *toolSession) multiEdit(in gjson.Result) (toolResult, error) {
	var edits []editSpec
	in.Get("edits").ForEach(func(_, v gjson.Result) bool {
		edits = append(edits, editSpec{v.Get("old_string").Str, v.Get("new_string").Str, v.Get("replace_all").Bool()})
		return true
	})
	t, rej, err := s.loadTarget(in.Get("file_path").Str)
	if err != nil || rej != nil {
		return deref(rej), err
	}
	// Each edit is checked against the file as it is, then all are
	// applied in order.
	for _, e := range edits {
		if _, rej := s.checkEdit(t, e); rej != nil {
			return *rej, nil
		}
	}
	updated := t.content
	var applied []string
	for _, e := range edits {
		old := strings.TrimRight(e.OldString, "\n")
		for _, a := range applied {
			if old != "" && strings.Contains(a, old) {
				return thrown("Cannot edit file: old_string is a substring of a new_string from a previous edit."), nil
			}
		}
		before := updated
		if e.OldString == "" {
			updated = e.NewString
		} else {
			updated = applyEdit(updated, e.OldString, e.NewString, e.ReplaceAll)
		}
		if updated == before {
			return thrown("String not found in file. Failed to apply edit."), nil
		}
		applied = append(applied, e.NewString)
	}
	if updated == t.content {
		return thrown("Original and edited file match exactly. Failed to apply edit."), nil
	}
	if err := s.save(t, updated); err != nil {
		return toolResult{}, err
	}
	nat := multiEditNative{FilePath: t.name, Edits: edits, OriginalFileContents: t.content,
		StructuredPatch: structuredPatch(t.content, updated)}
	var b strings.Builder
	plural := "s"
	if len(edits) == 1 {
		plural = ""
	}
	fmt.Fprintf(&b, "Applied %d edit%s to %s:", len(edits), plural, t.name)
	for i, e := range edits {
		fmt.Fprintf(&b, "\n%d. Replaced \"%s\" with \"%s\"", i+1, clip50(e.OldString), clip50(e.NewString))
	}
	return toolResult{content: b.String(), native: nat}, nil
}

func clip50(s string) string {
	if jsstr.Len(s) > 50 {
		return jsstr.Prefix(s, 50) + "..."
	}
	return s
}

func deref(r *toolResult) toolResult {
	if r == nil {
		return toolResult{}
	}
	return *r
}

// loadTarget reads the file an Edit names; a missing file is not an error
// yet, since an empty old_string creates it.
func (s *toolSession) loadTarget(name string) (target, *toolResult, error) {
	t := target{name: name, path: s.absPath(name)}
	f, err := run.ReadFile(t.path)
	switch {
	case err == nil:
		t.exists = true
		raw := validUTF8(f.Content)
		t.crlf = crlfFile(raw)
		t.content = strings.ReplaceAll(raw, "\r\n", "\n")
	case errors.Is(err, fs.ErrNotExist) || run.KindOf(err) == run.NotFound:
	case isPvisorError(err):
		return t, nil, err
	default:
		r := thrown(nodeError(err, "open", t.path))
		return t, &r, nil
	}
	return t, nil, nil
}

// checkEdit is Edit's validateInput: the first rule the edit breaks, as
// the CLI words it, or the text old_string stands for in the file.
func (s *toolSession) checkEdit(t target, e editSpec) (string, *toolResult) {
	rej := func(msg string) (string, *toolResult) { r := rejected(msg); return "", &r }
	if e.OldString == e.NewString {
		return rej("No changes to make: old_string and new_string are exactly the same.")
	}
	if !t.exists {
		if e.OldString == "" {
			return "", nil
		}
		var msg string
		if s.style.modern() {
			msg = fmt.Sprintf("File does not exist. Note: your current working directory is %s.", s.cwd())
			if m := s.didYouMean(t.path); m != "" {
				msg += " Did you mean " + m + "?"
			}
		} else {
			msg = "File does not exist."
			if s.shell.Cwd() != s.ws {
				msg += " Current working directory: " + s.cwd()
			}
			if m := similarFile(t.path); m != "" {
				msg += " Did you mean " + m + "?"
			}
		}
		return rej(msg)
	}
	if e.OldString == "" {
		if jsstr.Trim(t.content) != "" {
			return rej("Cannot create new file - file already exists.")
		}
		return "", nil
	}
	if strings.HasSuffix(t.path, ".ipynb") {
		return rej("File is a Jupyter Notebook. Use the NotebookEdit to edit this file.")
	}
	prev, ok := s.files[t.path]
	if !ok || prev.partial {
		return rej(notReadYet)
	}
	if fi, err := os.Stat(t.path); err == nil && fi.ModTime().UnixMilli() > prev.timestamp &&
		!(prev.offset <= 1 && prev.limit == 0 && prev.content == t.content) {
		return rej(modifiedSince)
	}
	actual, found := findActual(t.content, e.OldString)
	if !found {
		msg := "String to replace not found in file.\nString: " + e.OldString
		if s.style.modern() && (escapeSeq().MatchString(e.OldString) || nonASCII().MatchString(e.OldString)) {
			msg += "\n(note: Edit also tried swapping \\uXXXX escapes and their characters; neither form matched, so the mismatch is likely elsewhere in old_string. Re-read the file and copy the exact surrounding text.)"
		}
		return rej(msg)
	}
	if n := strings.Count(t.content, actual); n > 1 && !e.ReplaceAll {
		return rej(fmt.Sprintf("Found %d matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: %s", n, e.OldString))
	}
	return actual, nil
}

var (
	escapeSeq = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\\u[0-9a-fA-F]{4}`) })
	nonASCII  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[\x{80}-\x{ffff}]`) })
)

// save writes an edited file back with the line ends it had and records it
// in readFileState.
func (s *toolSession) save(t target, updated string) error {
	out := updated
	if t.crlf {
		out = strings.ReplaceAll(strings.ReplaceAll(updated, "\r\n", "\n"), "\n", "\r\n")
	}
	if _, err := run.WriteFile(t.path, []byte(out)); err != nil {
		return fmt.Errorf("claude: writing %s: %w", t.path, err)
	}
	return s.remember(t.path, updated)
}

// crlfFile reports whether a file's first 4096 bytes use CRLF line ends
// more than bare LF, which is how the CLI picks the line ends to write.
func crlfFile(raw string) bool {
	head := raw
	if len(head) > 4096 {
		head = head[:4096]
	}
	crlf := strings.Count(head, "\r\n")
	lf := strings.Count(head, "\n") - crlf
	return crlf > lf
}

// findActual locates old in content, falling back to a match with curly
// quotes taken as straight ones, as the CLI's Edit does.
func findActual(content, old string) (string, bool) {
	if strings.Contains(content, old) {
		return old, true
	}
	nc := straightQuotes(content)
	if i := strings.Index(nc, straightQuotes(old)); i >= 0 {
		// Straightening keeps lengths in UTF-16 units but not in bytes:
		// map the rune offsets back onto content.
		start := runeOffset(content, runeCount(nc[:i]))
		end := runeOffset(content, runeCount(nc[:i])+runeCount(old))
		return content[start:end], true
	}
	return "", false
}

func runeCount(s string) int { return len([]rune(s)) }

func runeOffset(s string, n int) int {
	i := 0
	for j := range s {
		if i == n {
			return j
		}
		i++
	}
	return len(s)
}

var quoteStraightener = strings.NewReplacer("\u2018", "'", "\u2019", "'", "\u201c", `"`, "\u201d", `"`)

func straightQuotes(s string) string { return quoteStraightener.Replace(s) }

// curlQuotes gives new the curly quotes the file used where old_string was
// matched through them.
func curlQuotes(actual, s string) string {
	double := strings.ContainsAny(actual, "\u201c\u201d")
	single := strings.ContainsAny(actual, "\u2018\u2019")
	if !double && !single {
		return s
	}
	r := []rune(s)
	opens := func(i int) bool {
		if i == 0 {
			return true
		}
		switch r[i-1] {
		case ' ', '\t', '\n', '\r', '(', '[', '{', '\u2014', '\u2013':
			return true
		}
		return false
	}
	out := make([]rune, len(r))
	copy(out, r)
	for i, c := range r {
		switch {
		case c == '"' && double:
			if opens(i) {
				out[i] = '\u201c'
			} else {
				out[i] = '\u201d'
			}
		case c == '\'' && single:
			between := i > 0 && i < len(r)-1 && unicode.IsLetter(r[i-1]) && unicode.IsLetter(r[i+1])
			if !between && opens(i) {
				out[i] = '\u2018'
			} else {
				out[i] = '\u2019'
			}
		}
	}
	return string(out)
}

// applyEdit replaces old with new once (or everywhere); deleting a text
// that is followed by a line end deletes the line end too.
func applyEdit(content, old, new string, all bool) string {
	if new == "" && !strings.HasSuffix(old, "\n") && strings.Contains(content, old+"\n") {
		old += "\n"
	}
	if all {
		return strings.ReplaceAll(content, old, new)
	}
	return strings.Replace(content, old, new, 1)
}

// editSnippet is the part of the edited file older CLIs showed after an
// Edit: four lines around the replacement.
func editSnippet(original, old, new string) (string, int) {
	before, _, _ := strings.Cut(original, old)
	line := len(splitCRLF(before)) - 1
	lines := splitCRLF(applyEdit(original, old, new, false))
	from := max(0, line-4)
	to := min(len(lines), line+4+len(splitCRLF(new)))
	if from > to {
		from = to
	}
	return strings.Join(lines[from:to], "\n"), from + 1
}

// leadingTabs turns each leading tab into two spaces, as the CLI does to
// the text it diffs for structuredPatch.
func leadingTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		n := len(l) - len(strings.TrimLeft(l, "\t"))
		if n > 0 {
			lines[i] = strings.Repeat("  ", n) + l[n:]
		}
	}
	return strings.Join(lines, "\n")
}
