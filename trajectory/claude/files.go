package claude

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// Read limits of Claude Code 2.1 (the defaults of its tengu_amber_wren
// settings): a whole-file read of a larger file is refused, and content
// over the token cap is cut to a partial view.
const (
	readMaxBytes  = 262144
	readMaxTokens = 25000
)

const (
	malwareReminder = "\n\n<system-reminder>\nWhenever you read a file, you should consider whether it would be considered malware. You CAN and SHOULD provide analysis of malware, what it is doing. But you MUST refuse to improve or augment the code. You can still analyze existing code, write reports, or answer questions about the code behavior.\n</system-reminder>\n"
	readUnchanged   = "Wasted call \u2014 file unchanged since your last Read. Refer to that earlier tool_result instead."
	notReadYet      = "File has not been read yet. Read it first before writing to it."
	modifiedSince   = "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it."
	partialView     = "[Truncated: PARTIAL view \u2014 "
)

// Extensions Read refuses as binary (images and PDFs have their own paths).
var binaryExt = setOf(".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".tiff", ".tif", ".mp4", ".mov",
	".avi", ".mkv", ".webm", ".wmv", ".flv", ".m4v", ".mpeg", ".mpg", ".mp3", ".wav", ".ogg", ".flac", ".aac",
	".m4a", ".wma", ".aiff", ".opus", ".zip", ".tar", ".gz", ".bz2", ".7z", ".rar", ".xz", ".z", ".tgz", ".iso",
	".exe", ".dll", ".so", ".dylib", ".bin", ".o", ".a", ".obj", ".lib", ".app", ".msi", ".deb", ".rpm", ".pdf",
	".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".ttf", ".otf", ".woff", ".woff2",
	".eot", ".pyc", ".pyo", ".class", ".jar", ".war", ".ear", ".node", ".wasm", ".rlib", ".sqlite", ".sqlite3",
	".db", ".mdb", ".idx", ".psd", ".ai", ".eps", ".sketch", ".fig", ".xd", ".blend", ".3ds", ".max", ".swf",
	".fla", ".lockb", ".dat", ".data")

// Extensions whose Read result is an image, a document or notebook cells,
// none of which the replay regenerates.
var richExt = setOf(".png", ".jpg", ".jpeg", ".gif", ".webp", ".pdf", ".ipynb")

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

type readNative struct {
	Type string   `json:"type"`
	File readFile `json:"file"`
}

type readFile struct {
	FilePath            string `json:"filePath"`
	Content             string `json:"content"`
	NumLines            int    `json:"numLines"`
	StartLine           int    `json:"startLine"`
	TotalLines          int    `json:"totalLines"`
	TruncatedByTokenCap bool   `json:"truncatedByTokenCap,omitempty"`
}

type unchangedNative struct {
	Type string `json:"type"`
	File struct {
		FilePath string `json:"filePath"`
	} `json:"file"`
}

func (s *toolSession) read(in gjson.Result) (toolResult, error) {
	name := in.Get("file_path").Str
	path := s.absPath(name)
	offset, hasLimit, limit := 1, false, 0
	if o := in.Get("offset"); o.Type == gjson.Number {
		offset = int(o.Num)
	}
	if l := in.Get("limit"); l.Type == gjson.Number {
		hasLimit, limit = true, int(l.Num)
	}
	ext := strings.ToLower(filepath.Ext(path))
	if richExt[ext] {
		return toolResult{}, fmt.Errorf("claude: reading %s files is not replayed", ext)
	}
	modern := s.style.modern()
	fi, statErr := os.Stat(path)
	if !modern && errors.Is(statErr, fs.ErrNotExist) {
		msg := "File does not exist."
		if s.shell.Cwd() != s.ws {
			msg += " Current working directory: " + s.cwd()
		}
		if m := similarFile(path); m != "" {
			msg += " Did you mean " + m + "?"
		}
		return rejected(msg), nil
	}
	if binaryExt[ext] && ext != ".pdf" {
		return rejected(fmt.Sprintf("This tool cannot read binary files. The file appears to be a binary %s file. Please use appropriate tools for binary file analysis.", ext)), nil
	}
	if modern {
		if prev, ok := s.files[path]; ok && !prev.partial && prev.offset != 0 && statErr == nil &&
			prev.offset == offset && prev.limit == limit && fi.ModTime().UnixMilli() == prev.timestamp {
			n := unchangedNative{Type: "file_unchanged"}
			n.File.FilePath = name
			return toolResult{content: readUnchanged, native: n}, nil
		}
	}
	switch {
	case errors.Is(statErr, fs.ErrNotExist):
		msg := fmt.Sprintf("File does not exist. Note: your current working directory is %s.", s.cwd())
		if m := s.didYouMean(path); m != "" {
			msg += " Did you mean " + m + "?"
		}
		return thrown(msg), nil
	case statErr != nil:
		return thrown(nodeError(statErr, "stat", path)), nil
	case fi.IsDir():
		return thrown(fmt.Sprintf("EISDIR: illegal operation on a directory, read '%s'", s.recorded(path))), nil
	}
	if !hasLimit && fi.Size() > readMaxBytes {
		if modern {
			return thrown(fmt.Sprintf("File content (%s) exceeds maximum allowed size (%s). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file.",
				jsSize(int(fi.Size())), jsSize(readMaxBytes))), nil
		}
		return rejected(fmt.Sprintf("File content (%s) exceeds maximum allowed size (%s). Please use offset and limit parameters to read specific portions of the file, or use the GrepTool to search for specific content.",
			jsSize(int(fi.Size())), jsSize(readMaxBytes))), nil
	}
	var lines []string
	var total int
	var modTime time.Time
	if hasLimit && limit > 0 && fi.Size() > readMaxBytes {
		// A window of a large file: stream it, holding only the lines
		// asked for (the total is still counted), as the CLI does.
		w, err := run.ReadLines(path, offset, limit)
		if err != nil {
			if isPvisorError(err) {
				return toolResult{}, err
			}
			return thrown(nodeError(err, "open", path)), nil
		}
		for i, l := range w.Lines {
			l = validUTF8([]byte(l))
			if modern && i == 0 && w.First == 1 {
				l = strings.TrimPrefix(l, "\ufeff")
			}
			lines = append(lines, strings.TrimSuffix(l, "\r"))
		}
		total, modTime = w.TotalLines, w.ModTime
		return s.readResult(path, name, ext, offset, limit, modern, hasLimit, lines, total, modTime)
	}
	f, err := run.ReadFile(path)
	if err != nil {
		if isPvisorError(err) {
			return toolResult{}, err
		}
		return thrown(nodeError(err, "open", path)), nil
	}
	text := validUTF8(f.Content)
	modTime = f.ModTime
	if modern {
		text = strings.TrimPrefix(text, "\ufeff")
		lines, total = selectLines(text, offset, hasLimit, limit)
	} else {
		all := splitCRLF(text)
		from := max(offset-1, 0)
		total = len(all)
		switch {
		case from >= len(all):
		case hasLimit && len(all)-from > limit:
			lines = all[from : from+limit]
		default:
			lines = all[from:]
		}
	}
	return s.readResult(path, name, ext, offset, limit, modern, hasLimit, lines, total, modTime)
}

// readResult formats the selected lines of a text file as the CLI does:
// token cap, numbering, empty-file and short-file notes.
func (s *toolSession) readResult(path, name, ext string, offset, limit int, modern, hasLimit bool, lines []string, total int, modTime time.Time) (toolResult, error) {
	content := strings.Join(lines, "\n")
	st := readState{content: content, timestamp: modTime.UnixMilli(), offset: offset, limit: limit}
	file := readFile{FilePath: name, Content: content, NumLines: len(lines), StartLine: offset, TotalLines: total}
	var note string
	if modern && content != "" {
		if tokens := estimateTokens(content, ext); tokens > readMaxTokens {
			if offset > 1 || hasLimit {
				return thrown(fmt.Sprintf("File content (%d tokens) exceeds maximum allowed tokens (%d). Use offset and limit parameters to read specific portions of the file, or search for specific content instead of reading the whole file.",
					tokens, readMaxTokens)), nil
			}
			content, file.NumLines, note = partialRead(content, tokens, total)
			file.Content, file.StartLine, file.TruncatedByTokenCap = content, max(1, offset), true
			st.content, st.limit, st.partial = content, file.NumLines, true
		}
	}
	s.setFile(path, st)
	res := toolResult{native: readNative{Type: "text", File: file}}
	switch {
	case content != "":
		if note != "" {
			res.content = "<system-reminder>" + note + "</system-reminder>\n\n"
		}
		res.content += s.numbered(content, file.StartLine)
		if !modern || s.style.suffixKnown {
			res.content += s.readSuffix()
		}
	case total == 0:
		res.content = "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
	default:
		res.content = fmt.Sprintf("<system-reminder>Warning: the file exists but is shorter than the provided offset (%d). The file has %d lines.</system-reminder>", offset, total)
	}
	return res, nil
}

func (s *toolSession) readSuffix() string {
	if s.style.suffixKnown {
		return s.style.readSuffix
	}
	return malwareReminder
}

// selectLines is the CLI's line window: lines split at "\n" without their
// "\r", the 1-based offset (0 behaves as 1) and an optional limit.
func selectLines(text string, offset int, hasLimit bool, limit int) ([]string, int) {
	from := max(offset-1, 0)
	if from == 0 && !hasLimit {
		text = strings.ReplaceAll(text, "\r\n", "\n")
		text = strings.TrimSuffix(text, "\r")
		lines := strings.Split(text, "\n")
		return lines, len(lines)
	}
	all := strings.Split(text, "\n")
	end := len(all)
	if hasLimit && from+limit < end {
		end = from + limit
	}
	var sel []string
	for i := from; i < end; i++ {
		sel = append(sel, strings.TrimSuffix(all[i], "\r"))
	}
	return sel, len(all)
}

// splitCRLF splits at "\n" and "\r\n", as /\r?\n/ does.
func splitCRLF(text string) []string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// estimateTokens is the CLI's rough count: four characters a token, two
// for JSON.
func estimateTokens(content, ext string) int {
	per := 4.0
	switch ext {
	case ".json", ".jsonl", ".jsonc":
		per = 2
	}
	return int(math.Round(float64(jsstr.Len(content)) / per))
}

// partialRead cuts a whole-file read over the token cap to its first lines
// (or characters, for very long lines) as Claude Code 2.1 does, with the
// note it puts in a system reminder before the content.
func partialRead(g string, tokens, total int) (string, int, string) {
	l := readMaxTokens
	lines := strings.Split(g, "\n")
	ratio := math.Max(0.5, float64(jsstr.Len(g))/float64(max(1, tokens)))
	est := func(s string) float64 { return float64(jsstr.Len(s)) / ratio }
	m := max(1, min(len(lines), int(math.Floor(float64(len(lines))*float64(l)/float64(max(1, tokens))*0.85))))
	w := strings.Join(lines[:m], "\n")
	for k := 0; k < 6; k++ {
		if est(w) <= float64(l) || m <= 1 {
			break
		}
		m = max(1, int(math.Floor(float64(m)*0.7)))
		w = strings.Join(lines[:m], "\n")
	}
	byChars := false
	if est(w) > float64(l) || jsstr.Trim(w) == "" {
		k := max(1, int(math.Floor(float64(l)*ratio*0.85)))
		for y := 0; y < 6; y++ {
			w = jsstr.Prefix(g, k)
			if est(w) <= float64(l) {
				break
			}
			k = max(1, int(math.Floor(float64(k)*0.7)))
		}
		byChars = true
	}
	n := m
	if byChars {
		n = strings.Count(w, "\n") + 1
	}
	var note string
	if !byChars && n < total {
		note = fmt.Sprintf("%sshowing lines 1-%d of %d total (%d tokens, cap %d). Call Read with offset=%d limit=%d for the next page, or Grep to find a specific section. Do NOT answer from this page alone if the answer may be further in the file.]",
			partialView, n, total, tokens, l, n+1, n)
	} else {
		note = fmt.Sprintf("%sshowing the first %d of %d characters (%d tokens, cap %d); this file has very long lines and cannot be paginated by line. Use Grep to find a specific section, or Read with offset/limit to page through it. Do NOT answer from this excerpt alone if the answer may be elsewhere in the file.]",
			partialView, jsstr.Len(w), jsstr.Len(g), tokens, l)
	}
	return w, n, note
}

// numbered is the CLI's cat -n rendering of content starting at line
// first: "N\tline" in 2.1, "     N→line" before.
func (s *toolSession) numbered(content string, first int) string {
	arrow := s.style.is(s.style.arrow, false)
	var b strings.Builder
	for i, line := range strings.Split(content, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		n := strconv.Itoa(first + i)
		if arrow {
			if len(n) < 6 {
				b.WriteString(strings.Repeat(" ", 6-len(n)))
			}
			b.WriteString(n)
			b.WriteString("\u2192")
			b.WriteString(line)
			continue
		}
		b.WriteString(n)
		b.WriteByte('\t')
		b.WriteString(strings.TrimSuffix(line, "\r"))
	}
	return b.String()
}

// didYouMean is the suggestion the CLI adds to a missing-file error: the
// same path under the current directory when the path names a sibling of
// it, else a file of the same name with another extension.
func (s *toolSession) didYouMean(path string) string {
	if m := s.cwdSibling(path); m != "" {
		return m
	}
	return similarFile(path)
}

// cwdSibling is the same path under the current directory, when path
// names something next to it that exists only inside it.
func (s *toolSession) cwdSibling(path string) string {
	cwd := s.shell.Cwd()
	parent := filepath.Dir(cwd)
	p := path
	if real, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		p = filepath.Join(real, filepath.Base(path))
	}
	prefix := parent + "/"
	if parent == "/" {
		prefix = "/"
	}
	if strings.HasPrefix(p, prefix) && !strings.HasPrefix(p, cwd+"/") && p != cwd {
		if rel, err := filepath.Rel(parent, p); err == nil {
			c := filepath.Join(cwd, rel)
			if _, err := os.Stat(c); err == nil {
				return s.recorded(c)
			}
		}
	}
	return ""
}

// similarFile names a file in the same directory with the same base name
// and another extension.
func similarFile(path string) string {
	dir := filepath.Dir(path)
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		n := e.Name()
		if strings.TrimSuffix(n, filepath.Ext(n)) == base && filepath.Join(dir, n) != path {
			return n
		}
	}
	return ""
}

// nodeError words a file-system error as Node.js does ("EACCES: permission
// denied, open '/x'").
func nodeError(err error, syscall, path string) string {
	var code, text string
	switch {
	case errors.Is(err, fs.ErrPermission):
		code, text = "EACCES", "permission denied"
	case errors.Is(err, fs.ErrNotExist):
		code, text = "ENOENT", "no such file or directory"
	default:
		var re *run.Error
		if errors.As(err, &re) && re.Kind == run.IsDir {
			code, text = "EISDIR", "illegal operation on a directory"
		} else {
			return err.Error()
		}
	}
	return fmt.Sprintf("%s: %s, %s '%s'", code, text, syscall, path)
}

type writeNative struct {
	Type            string  `json:"type"`
	FilePath        string  `json:"filePath"`
	Content         string  `json:"content"`
	StructuredPatch []hunk  `json:"structuredPatch"`
	OriginalFile    *string `json:"originalFile"`
	UserModified    *bool   `json:"userModified,omitempty"`
}

func (s *toolSession) write(in gjson.Result) (toolResult, error) {
	name := in.Get("file_path").Str
	content := in.Get("content").Str
	path := s.absPath(name)
	fi, statErr := os.Stat(path)
	var old *string
	if statErr == nil {
		if fi.IsDir() {
			return thrown(fmt.Sprintf("EISDIR: illegal operation on a directory, open '%s'", s.recorded(path))), nil
		}
		prev, ok := s.files[path]
		if !ok || prev.partial {
			return rejected(notReadYet), nil
		}
		f, err := run.ReadFile(path)
		if err != nil {
			if isPvisorError(err) {
				return toolResult{}, err
			}
			return thrown(nodeError(err, "open", path)), nil
		}
		text := strings.ReplaceAll(validUTF8(f.Content), "\r\n", "\n")
		if f.ModTime.UnixMilli() > prev.timestamp && !(prev.offset <= 1 && prev.limit == 0 && prev.content == text) {
			return rejected(modifiedSince), nil
		}
		old = &text
	}
	if _, err := run.WriteFile(path, []byte(content)); err != nil {
		if isPvisorError(err) {
			return toolResult{}, err
		}
		return thrown(nodeError(err, "open", path)), nil
	}
	if err := s.remember(path, content); err != nil {
		return toolResult{}, err
	}
	nat := writeNative{Type: "create", FilePath: name, Content: content, StructuredPatch: []hunk{}, OriginalFile: old}
	note := ""
	if s.style.is(s.style.note, true) {
		// The versions with the note also record userModified.
		note = stateNote
		f := false
		nat.UserModified = &f
	}
	res := toolResult{native: nat}
	if old == nil {
		res.content = "File created successfully at: " + name + note
		return res, nil
	}
	nat.Type = "update"
	nat.StructuredPatch = structuredPatch(*old, content)
	res.native = nat
	if s.style.is(s.style.editSnippet, false) {
		shown := content
		if lines := splitCRLF(content); len(lines) > writeSnippetLines {
			shown = strings.Join(lines[:writeSnippetLines], "\n") + clippedNote
		}
		res.content = "The file " + name + " has been updated." + snippetIntro + "\n" + s.numbered(shown, 1)
		return res, nil
	}
	res.content = "The file " + name + " has been updated successfully." + note
	return res, nil
}

const (
	writeSnippetLines = 16000
	clippedNote       = "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with Grep in order to find the line numbers of what you are looking for.</NOTE>"
)

// remember records what the agent now knows of a file it wrote.
func (s *toolSession) remember(path, content string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("claude: %s vanished after writing it: %w", path, err)
	}
	s.setFile(path, readState{content: content, timestamp: fi.ModTime().UnixMilli()})
	return nil
}

// setFile records a readFileState entry; seq keeps the most recent first
// when the CLI lists them.
func (s *toolSession) setFile(path string, st readState) {
	s.fileSeq++
	st.seq = s.fileSeq
	s.files[path] = st
}
