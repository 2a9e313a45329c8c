package opencode

import (
	"os"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	"github.com/pvisor/pvisor/trajectory/internal/linediff"
)

// OpenCode's write, edit and (older versions') multiedit tools. Files are
// read and written through the run package; the matching rules are
// OpenCode's own (its edit tolerates indentation and whitespace drift).

const bom = "\uFEFF"

func splitBOM(s string) (bool, string) {
	if strings.HasPrefix(s, bom) {
		return true, s[len(bom):]
	}
	return false, s
}

func withBOM(s string, b bool) string {
	if b {
		return bom + s
	}
	return s
}

func (s *session) write(args gjson.Result) (result, error) {
	u := s.resolve(args.Get("filePath").Str)
	_, statErr := os.Stat(u)
	exists := statErr == nil
	oldBOM := false
	if exists {
		f, err := run.ReadFile(u)
		if err != nil {
			return toolError(platformError("readFile", u, err)), nil
		}
		oldBOM, _ = splitBOM(string(f.Content))
	}
	newBOM, text := splitBOM(args.Get("content").Str)
	if _, err := run.WriteFile(u, []byte(withBOM(text, oldBOM || newBOM))); err != nil {
		return toolError(platformError("writeFile", u, err)), nil
	}
	r := result{output: "Wrote file successfully.", title: s.rel(u)}
	r.metadata = jobj{{"diagnostics", jobj{}}, {"filepath", u}, {"exists", exists}}
	return r, nil
}

// Edit error messages.
const (
	errNoChange  = "No changes to apply: oldString and newString are identical."
	errEmptyOld  = "oldString cannot be empty when editing an existing file. Provide the exact text to replace, or use write for an intentional full-file replacement."
	errNotFound  = "Could not find oldString in the file. It must match exactly, including whitespace, indentation, and line endings."
	errMultiple  = "Found multiple matches for oldString. Provide more surrounding context to make the match unique."
	errTooLarge  = "Refusing replacement because the matched span is much larger than oldString. Re-read the file and provide the full exact oldString for the intended replacement."
	errNoPathArg = "filePath is required"
)

func (s *session) edit(args gjson.Result) (result, error) {
	return s.editOne(args.Get("filePath").Str, args.Get("oldString").Str, args.Get("newString").Str,
		args.Get("replaceAll").Bool())
}

func (s *session) editOne(filePath, oldString, newString string, all bool) (result, error) {
	if filePath == "" {
		return toolError(errNoPathArg), nil
	}
	if oldString == newString {
		return toolError(errNoChange), nil
	}
	u := s.resolve(filePath)
	var before, after, diff string
	if oldString == "" {
		if _, err := os.Stat(u); err == nil {
			return toolError(errEmptyOld), nil
		}
		b, text := splitBOM(newString)
		after = text
		diff = twoFilesPatch(u, "", after)
		if _, err := run.WriteFile(u, []byte(withBOM(after, b))); err != nil {
			return toolError(platformError("writeFile", u, err)), nil
		}
	} else {
		st, err := os.Stat(u)
		if err != nil {
			return toolError("File " + u + " not found"), nil
		}
		if st.IsDir() {
			return toolError("Path is a directory, not a file: " + u), nil
		}
		f, err := run.ReadFile(u)
		if err != nil {
			return toolError(platformError("readFile", u, err)), nil
		}
		oldBOM, text := splitBOM(jsstr.Decode(f.Content))
		before = text
		eol := "\n"
		if strings.Contains(before, "\r\n") {
			eol = "\r\n"
		}
		replaced, msg := replaceText(before, toEOL(normalizeEOL(oldString), eol), toEOL(normalizeEOL(newString), eol), all)
		if msg != "" {
			return toolError(msg), nil
		}
		newBOM, text := splitBOM(replaced)
		after = text
		if _, err := run.WriteFile(u, []byte(withBOM(after, oldBOM || newBOM))); err != nil {
			return toolError(platformError("writeFile", u, err)), nil
		}
		diff = twoFilesPatch(u, normalizeEOL(before), normalizeEOL(after))
	}
	adds, dels := linediff.Changes(before, after)
	r := result{output: "Edit applied successfully.", title: s.rel(u)}
	r.metadata = jobj{{"diagnostics", jobj{}}, {"diff", diff},
		{"filediff", jobj{{"file", u}, {"patch", diff}, {"additions", adds}, {"deletions", dels}}}}
	return r, nil
}

// multiedit (OpenCode before 1.2) applies its edits one after the other
// through the edit tool and reports the last edit's output.
func (s *session) multiedit(args gjson.Result) (result, error) {
	path := args.Get("filePath").Str
	var last result
	var metas []jobj
	for _, e := range args.Get("edits").Array() {
		r, err := s.editOne(path, e.Get("oldString").Str, e.Get("newString").Str, e.Get("replaceAll").Bool())
		if err != nil || r.isError {
			return r, err
		}
		last = r
		metas = append(metas, r.metadata)
	}
	r := result{output: last.output, title: s.rel(s.resolve(path))}
	r.metadata = jobj{{"results", metas}}
	return r, nil
}

func normalizeEOL(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

func toEOL(s, eol string) string {
	if eol == "\n" {
		return s
	}
	return strings.ReplaceAll(s, "\n", eol)
}

// replaceText is OpenCode's replace(): the first matcher whose candidate
// occurs exactly once (or at all, with replaceAll) wins. It returns the new
// content or the tool's error message.
func replaceText(content, old, repl string, all bool) (string, string) {
	if old == repl {
		return "", errNoChange
	}
	if old == "" {
		return "", errEmptyOld
	}
	notFound := true
	for _, m := range matchers {
		var out, msg string
		done := false
		m(content, old, func(cand string) bool {
			i := strings.Index(content, cand)
			if i < 0 {
				return true
			}
			notFound = false
			if spanTooLarge(cand, old) {
				msg, done = errTooLarge, true
				return false
			}
			if all {
				out, done = jsReplaceAll(content, cand, repl), true
				return false
			}
			if strings.LastIndex(content, cand) != i {
				return true
			}
			out, done = content[:i]+repl+content[i+len(cand):], true
			return false
		})
		if done {
			return out, msg
		}
	}
	if notFound {
		return "", errNotFound
	}
	return "", errMultiple
}

// spanTooLarge refuses a fuzzy match that covers far more than oldString.
func spanTooLarge(match, old string) bool {
	n := strings.Count(old, "\n") + 1
	if strings.Count(match, "\n")+1 >= max(n+3, n*2) {
		return true
	}
	if n == 1 {
		return false
	}
	m, o := jsstr.Len(jsstr.Trim(match)), jsstr.Len(jsstr.Trim(old))
	return m > max(o+500, o*4)
}

// jsReplaceAll is String.prototype.replaceAll with a string pattern, whose
// replacement expands $$, $&, $` and $'.
func jsReplaceAll(s, pat, repl string) string {
	var b strings.Builder
	pos := 0
	for {
		i := strings.Index(s[pos:], pat)
		if i < 0 {
			break
		}
		at := pos + i
		b.WriteString(s[pos:at])
		b.WriteString(expandReplacement(repl, s, at, pat))
		pos = at + len(pat)
	}
	b.WriteString(s[pos:])
	return b.String()
}

func expandReplacement(repl, s string, at int, match string) string {
	if !strings.Contains(repl, "$") {
		return repl
	}
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		if repl[i] != '$' || i+1 >= len(repl) {
			b.WriteByte(repl[i])
			continue
		}
		switch repl[i+1] {
		case '$':
			b.WriteByte('$')
		case '&':
			b.WriteString(match)
		case '`':
			b.WriteString(s[:at])
		case '\'':
			b.WriteString(s[at+len(match):])
		default:
			b.WriteByte('$')
			continue
		}
		i++
	}
	return b.String()
}
