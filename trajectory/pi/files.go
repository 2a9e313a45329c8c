package pi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// read returns a text file's lines from offset (1-based) on, at most limit
// of them, cut to 2000 lines / 50 KB with a notice saying how to go on.
//
// Releases up to 0.13 ended the notices with "continue]" instead of
// "continue.]"; orig, the recorded result, picks the wording.
func (s *session) read(args gjson.Result, orig string) result {
	stop := "."
	if strings.HasSuffix(orig, " to continue]") {
		stop = ""
	}
	path := args.Get("path").Str
	shown, real := s.resolveHere(path)
	if err := syscall.Access(real, 4 /* R_OK */); err != nil {
		return failure(nodeFsError(err, "access", shown))
	}
	if err := run.CheckReadable("read", real); err != nil {
		return result{fatal: err}
	}
	f, err := os.Open(real)
	if err != nil {
		return failure(nodeFsError(err, "open", shown))
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return failure(nodeFsError(err, "read", ""))
	}
	if mime := imageMime(data); mime != "" {
		// pi attaches the image (resized when too large); the replay keeps
		// the recorded image block and regenerates the text note.
		return result{text: "Read image file [" + mime + "]"}
	}
	lines := strings.Split(decodeUTF8(data, false), "\n")
	start := 0
	if o := args.Get("offset"); o.Type == gjson.Number && int(o.Num) != 0 {
		start = max(0, int(o.Num)-1)
		if start >= len(lines) {
			return failure(fmt.Sprintf("Offset %s is beyond end of file (%d lines total)", jsstr.Number(o.Num), len(lines)))
		}
	}
	selected, userLimited := lines[start:], -1
	if l := args.Get("limit"); l.Type == gjson.Number {
		end := min(start+int(l.Num), len(lines))
		selected = lines[start:max(start, end)]
		userLimited = end - start
	}
	tr := truncateHead(strings.Join(selected, "\n"), defaultMaxLines, defaultMaxBytes, s.sem.trailingNewlineLine)
	first := start + 1
	var text string
	var details json.RawMessage
	switch {
	case tr.FirstLineExceedsLimit:
		text = fmt.Sprintf("[Line %d is %s, exceeds %s limit. Use bash: sed -n '%dp' %s | head -c %d]",
			first, formatSize(len(lines[start])), formatSize(defaultMaxBytes), first, path, defaultMaxBytes)
		details = truncationDetails(&tr)
	case tr.Truncated:
		end := first + tr.OutputLines - 1
		text = tr.Content
		if tr.TruncatedBy == "lines" {
			text += fmt.Sprintf("\n\n[Showing lines %d-%d of %d. Use offset=%d to continue%s]", first, end, len(lines), end+1, stop)
		} else {
			text += fmt.Sprintf("\n\n[Showing lines %d-%d of %d (%s limit). Use offset=%d to continue%s]",
				first, end, len(lines), formatSize(defaultMaxBytes), end+1, stop)
		}
		details = truncationDetails(&tr)
	case userLimited >= 0 && start+userLimited < len(lines):
		next := start + userLimited + 1
		text = fmt.Sprintf("%s\n\n[%d more lines in file. Use offset=%d to continue%s]", tr.Content, len(lines)-(start+userLimited), next, stop)
	default:
		text = tr.Content
	}
	return result{text: text, details: details}
}

func truncationDetails(tr *truncation) json.RawMessage {
	var o jsObject
	o.raw("truncation", string(tr.appendJSON(nil)))
	return o.native()
}

// imageMime recognizes the image formats pi sends as attachments.
func imageMime(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// write creates or overwrites a file, parents included, and reports the
// content's length in UTF-16 units (JavaScript's string length).
// writeBytesRe is the write confirmation before 0.85.0, which counted the
// bytes (UTF-16 code units, in fact) written.
var writeBytesRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Successfully wrote \d+ bytes to `) })

// write writes the file; its confirmation follows the recorded one when
// there is one (orig), else the release's.
func (s *session) write(args gjson.Result, orig string) result {
	path, content := args.Get("path").Str, args.Get("content").Str
	shown, real := s.resolveHere(path)
	if err := run.GuardWrite("open", real); err != nil {
		return failure(nodeFsError(err, "open", shown))
	}
	if err := mkdirp(filepath.Dir(real)); err != nil {
		return failure(nodeFsError(err, "mkdir", filepath.Dir(shown)))
	}
	if err := run.CheckRegular("write", real); err != nil {
		return result{fatal: err}
	}
	if err := os.WriteFile(real, []byte(content), 0o666); err != nil {
		return failure(nodeFsError(err, "open", shown))
	}
	run.NoteWrite(real)
	bytesForm := s.sem.writeBytes
	switch {
	case writeBytesRe().MatchString(orig):
		bytesForm = true
	case strings.HasPrefix(orig, "Successfully wrote to "):
		bytesForm = false
	}
	if !bytesForm {
		return result{text: "Successfully wrote to " + path}
	}
	return result{text: fmt.Sprintf("Successfully wrote %d bytes to %s", jsstr.Len(content), path)}
}

// mkdirp is mkdir -p the way Node's recursive mkdir fails: an existing
// non-directory is EEXIST.
func mkdirp(dir string) error {
	err := os.Mkdir(dir, 0o777)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EEXIST):
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
			return nil
		}
		return err
	case errors.Is(err, syscall.ENOENT):
		parent := filepath.Dir(dir)
		if parent == dir {
			return err
		}
		if perr := mkdirp(parent); perr != nil {
			return perr
		}
		if err = os.Mkdir(dir, 0o777); err != nil && errors.Is(err, syscall.EEXIST) {
			return nil
		}
		return err
	}
	return err
}

// editArgs reads an edit call: {path, edits:[{oldText,newText}]}, edits
// possibly as a JSON string, and the older top-level oldText/newText.
func editArgs(args gjson.Result) (string, []replacement) {
	var edits []replacement
	list := args.Get("edits")
	if list.Type == gjson.String {
		if p := gjson.Parse(list.Str); p.IsArray() {
			list = p
		}
	}
	list.ForEach(func(_, e gjson.Result) bool {
		edits = append(edits, replacement{e.Get("oldText").Str, e.Get("newText").Str})
		return true
	})
	if o, n := args.Get("oldText"), args.Get("newText"); o.Type == gjson.String && n.Type == gjson.String {
		edits = append(edits, replacement{o.Str, n.Str})
	}
	return args.Get("path").Str, edits
}

// edit applies exact (or whitespace/typography-insensitive) replacements
// matched against the original text, keeping its BOM and line endings.
// orig, the recorded result, tells which pi release's wording to use.
func (s *session) edit(args gjson.Result, orig string) result {
	path, edits := editArgs(args)
	if len(edits) == 0 {
		return failure("Edit tool input is invalid. edits must contain at least one replacement.")
	}
	shown, real := s.resolveHere(path)
	if err := syscall.Access(real, 4|2 /* R_OK|W_OK */); err != nil {
		if strings.HasPrefix(orig, "File not found: ") && errors.Is(err, syscall.ENOENT) {
			return failure("File not found: " + path)
		}
		code := nodeErrCode(err)
		if code == "" {
			return failure(fmt.Sprintf("Could not edit file: %s. %s.", path, nodeFsError(err, "access", shown)))
		}
		return failure(fmt.Sprintf("Could not edit file: %s. Error code: %s.", path, code))
	}
	if err := run.CheckReadable("edit", real); err != nil {
		return result{fatal: err}
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return failure(nodeFsError(err, "read", ""))
	}
	raw := decodeUTF8(data, false)
	bom := ""
	if strings.HasPrefix(raw, "\uFEFF") {
		bom, raw = "\uFEFF", raw[len("\uFEFF"):]
	}
	ending := detectLineEnding(raw)
	base, changed, err := applyEdits(normalizeToLF(raw), edits, path, s.sem.fuzzyKeepsLines)
	if err != nil {
		return failure(err.Error())
	}
	final := changed
	if ending == "\r\n" {
		final = strings.ReplaceAll(changed, "\n", "\r\n")
	}
	if err := run.GuardWrite("open", real); err != nil {
		return failure(nodeFsError(err, "open", shown))
	}
	if err := os.WriteFile(real, []byte(bom+final), 0o666); err != nil {
		return failure(nodeFsError(err, "open", shown))
	}
	run.NoteWrite(real)
	diff, first := generateDiff(base, changed)
	var o jsObject
	o.str("diff", diff)
	if s.sem.editPatch {
		o.str("patch", unifiedPatch(path, base, changed))
	}
	text := fmt.Sprintf("Successfully replaced %d block(s) in %s.", len(edits), path)
	switch {
	case strings.HasPrefix(orig, "Successfully replaced text in ") && strings.Contains(orig, ". Changed "):
		// pi ≤ 0.13: one replacement, its sizes in the message, no line number.
		e := edits[len(edits)-1]
		text = fmt.Sprintf("Successfully replaced text in %s. Changed %d characters to %d characters.", path, jsstr.Len(e.oldText), jsstr.Len(e.newText))
		return result{text: text, details: o.native()}
	case strings.HasPrefix(orig, "Successfully replaced text in "):
		text = fmt.Sprintf("Successfully replaced text in %s.", path)
	}
	if first > 0 {
		o.num("firstChangedLine", first)
	}
	return result{text: text, details: o.native()}
}

// ls lists one directory: names sorted case-insensitively the way
// localeCompare orders them, "/" after directories, dotfiles included,
// at most limit (500) entries and 50 KB.
func (s *session) ls(args gjson.Result) result {
	p := args.Get("path").Str
	if p == "" {
		p = "."
	}
	shown, real := s.resolveHere(p)
	st, err := os.Stat(real)
	if err != nil {
		return failure("Path not found: " + shown)
	}
	if !st.IsDir() {
		return failure("Not a directory: " + shown)
	}
	names, err := readDirNames(real)
	if err != nil {
		return failure("Cannot read directory: " + nodeFsError(err, "scandir", shown))
	}
	lower := make(map[string]string, len(names))
	for _, n := range names {
		lower[n] = strings.ToLower(n)
	}
	sort.SliceStable(names, func(i, j int) bool { return localeCompare(lower[names[i]], lower[names[j]]) < 0 })
	limit := 500
	if l := args.Get("limit"); l.Type == gjson.Number {
		limit = int(l.Num)
	}
	var out []string
	limitReached := false
	for _, n := range names {
		if len(out) >= limit {
			limitReached = true
			break
		}
		est, err := os.Stat(filepath.Join(real, n))
		if err != nil {
			continue
		}
		if est.IsDir() {
			n += "/"
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return result{text: "(empty directory)"}
	}
	tr := truncateHead(strings.Join(out, "\n"), maxSafeInteger, defaultMaxBytes, s.sem.trailingNewlineLine)
	text := tr.Content
	var notices []string
	var o jsObject
	if limitReached {
		notices = append(notices, fmt.Sprintf("%d entries limit reached. Use limit=%d for more", limit, limit*2))
		o.num("entryLimitReached", limit)
	}
	if tr.Truncated {
		notices = append(notices, formatSize(defaultMaxBytes)+" limit reached")
		o.raw("truncation", string(tr.appendJSON(nil)))
	}
	if len(notices) > 0 {
		text += "\n\n[" + strings.Join(notices, ". ") + "]"
	}
	return result{text: text, details: o.native()}
}

// readDirNames lists a directory in the order the kernel returns it, as
// readdirSync does (the sort above is stable, so names that compare equal
// keep that order).
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
