package opencode

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// OpenCode's read tool.
const (
	readDefaultLimit = 2000
	readMaxLineChars = 2000 // UTF-16 units
	readMaxBytes     = 51200
	readSampleBytes  = 4096
)

func (s *session) read(step int, args gjson.Result) (result, error) {
	h := s.resolve(args.Get("filePath").Str)
	title := s.rel(h)
	offset := int(args.Get("offset").Int())
	if offset == 0 {
		offset = 1
	}
	limit := readDefaultLimit
	if l := args.Get("limit"); l.Exists() && l.Type != gjson.Null {
		limit = int(l.Int())
	}
	st, err := os.Stat(h)
	if err != nil {
		if os.IsNotExist(err) {
			return toolError(notFound(h)), nil
		}
		return toolError(platformError("stat", h, err)), nil
	}
	if st.IsDir() {
		return s.readDir(h, title, offset, limit)
	}
	loaded := s.instructions(step, h)
	paths := make([]string, len(loaded))
	for i, l := range loaded {
		paths[i] = l.path
	}
	f, err := run.ReadFile(h)
	if err != nil {
		return toolError(platformError("readFile", h, err)), nil
	}
	sample := f.Content[:min(len(f.Content), readSampleBytes)]
	if mime := mediaType(h, sample); mime != "" {
		msg := "Image read successfully"
		if mime == "application/pdf" {
			msg = "PDF read successfully"
		}
		r := result{output: msg, title: title,
			metadata: jobj{{"preview", msg}, {"truncated", false}, {"loaded", paths}}}
		r.attach = []jobj{{{"type", "file"}, {"mime", mime},
			{"url", "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(f.Content)}}}
		return r, nil
	}
	if isBinary(h, sample) {
		return toolError("Cannot read binary file: " + h), nil
	}
	lines := jsSplitLines(jsstr.Decode(f.Content))
	var raw []string
	count, bytesUsed := 0, 0
	cut, more := false, false
	for _, line := range lines {
		count++
		if count < offset {
			continue
		}
		if len(raw) >= limit {
			more = true
			continue
		}
		if jsstr.Len(line) > readMaxLineChars {
			line = jsstr.Prefix(line, readMaxLineChars) + "... (line truncated to " + strconv.Itoa(readMaxLineChars) + " chars)"
		}
		n := len(line)
		if len(raw) > 0 {
			n++
		}
		if bytesUsed+n > readMaxBytes {
			cut, more = true, true
			break
		}
		raw = append(raw, line)
		bytesUsed += n
	}
	if count < offset && !(count == 0 && offset == 1) {
		return toolError("Offset " + strconv.Itoa(offset) + " is out of range for this file (" + strconv.Itoa(count) + " lines)"), nil
	}
	var out strings.Builder
	out.WriteString("<path>" + h + "</path>\n<type>file</type>\n<content>\n")
	for i, l := range raw {
		if i > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(strconv.Itoa(i+offset) + ": " + l)
	}
	last := offset + len(raw) - 1
	switch {
	case cut:
		out.WriteString("\n\n(Output capped at 50 KB. Showing lines " + strconv.Itoa(offset) + "-" + strconv.Itoa(last) +
			". Use offset=" + strconv.Itoa(last+1) + " to continue.)")
	case more:
		out.WriteString("\n\n(Showing lines " + strconv.Itoa(offset) + "-" + strconv.Itoa(last) + " of " + strconv.Itoa(count) +
			". Use offset=" + strconv.Itoa(last+1) + " to continue.)")
	default:
		out.WriteString("\n\n(End of file - total " + strconv.Itoa(count) + " lines)")
	}
	out.WriteString("\n</content>")
	if len(loaded) > 0 {
		texts := make([]string, len(loaded))
		for i, l := range loaded {
			texts[i] = l.content
		}
		out.WriteString("\n\n<system-reminder>\n" + strings.Join(texts, "\n\n") + "\n</system-reminder>")
	}
	truncated := more || cut
	text := strings.Join(raw, "\n")
	r := result{output: out.String(), title: title}
	r.metadata = jobj{{"preview", strings.Join(raw[:min(len(raw), 20)], "\n")}, {"truncated", truncated}, {"loaded", paths},
		{"display", jobj{{"type", "file"}, {"path", h}, {"text", text}, {"lineStart", offset}, {"lineEnd", last},
			{"totalLines", count}, {"truncated", truncated}}}}
	return r, nil
}

// notFound is the read tool's message for a missing path, with up to three
// names of its directory that contain the base name or are contained in it.
func notFound(p string) string {
	dir, base := filepath.Dir(p), strings.ToLower(filepath.Base(p))
	var near []string
	if d, err := os.Open(dir); err == nil {
		// Directory order, as the tool lists it (no sorting).
		names, _ := d.Readdirnames(-1)
		d.Close()
		for _, n := range names {
			l := strings.ToLower(n)
			if strings.Contains(l, base) || strings.Contains(base, l) {
				near = append(near, filepath.Join(dir, n))
				if len(near) == 3 {
					break
				}
			}
		}
	}
	if len(near) > 0 {
		return "File not found: " + p + "\n\nDid you mean one of these?\n" + strings.Join(near, "\n")
	}
	return "File not found: " + p
}

func (s *session) readDir(h, title string, offset, limit int) (result, error) {
	ents, err := os.ReadDir(h)
	if err != nil {
		return toolError(platformError("readDirectory", h, err)), nil
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		n := e.Name()
		switch {
		case e.IsDir():
			n += "/"
		case e.Type()&os.ModeSymlink != 0:
			if st, err := os.Stat(filepath.Join(h, n)); err == nil && st.IsDir() {
				n += "/"
			}
		}
		names = append(names, n)
	}
	slices.SortStableFunc(names, localeCompare)
	from := offset - 1
	sel := []string{}
	if from < len(names) {
		sel = names[from:min(len(names), from+max(limit, 0))]
	}
	more := from+len(sel) < len(names)
	tail := "\n(" + strconv.Itoa(len(names)) + " entries)"
	if more {
		tail = "\n(Showing " + strconv.Itoa(len(sel)) + " of " + strconv.Itoa(len(names)) +
			" entries. Use 'offset' parameter to read beyond entry " + strconv.Itoa(offset+len(sel)) + ")"
	}
	out := strings.Join([]string{"<path>" + h + "</path>", "<type>directory</type>", "<entries>",
		strings.Join(sel, "\n"), tail, "</entries>"}, "\n")
	r := result{output: out, title: title}
	r.metadata = jobj{{"preview", strings.Join(sel[:min(len(sel), 20)], "\n")}, {"truncated", more}, {"loaded", []string{}},
		{"display", jobj{{"type", "directory"}, {"path", h}, {"entries", sel}, {"offset", offset},
			{"totalEntries", len(names)}, {"truncated", more}}}}
	return r, nil
}

// binaryExts are the extensions the read tool refuses without looking.
var binaryExts = map[string]bool{".zip": true, ".tar": true, ".gz": true, ".exe": true, ".dll": true, ".so": true,
	".class": true, ".jar": true, ".war": true, ".7z": true, ".doc": true, ".docx": true, ".xls": true, ".xlsx": true,
	".ppt": true, ".pptx": true, ".odt": true, ".ods": true, ".odp": true, ".bin": true, ".dat": true, ".obj": true,
	".o": true, ".a": true, ".lib": true, ".wasm": true, ".pyc": true, ".pyo": true}

// isBinary: a known binary extension, a NUL byte in the sample, or more
// than 30% control characters.
func isBinary(p string, sample []byte) bool {
	if binaryExts[strings.ToLower(filepath.Ext(p))] {
		return true
	}
	if len(sample) == 0 {
		return false
	}
	ctl := 0
	for _, b := range sample {
		if b == 0 {
			return true
		}
		if b < 9 || b > 13 && b < 32 {
			ctl++
		}
	}
	return float64(ctl)/float64(len(sample)) > 0.3
}

// mediaType returns the MIME type of images and PDFs the read tool
// attaches instead of reading as text, "" for anything else.
func mediaType(p string, sample []byte) string {
	switch {
	case bytes.HasPrefix(sample, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(sample, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg"
	case bytes.HasPrefix(sample, []byte("GIF87a")), bytes.HasPrefix(sample, []byte("GIF89a")):
		return "image/gif"
	case len(sample) >= 12 && string(sample[:4]) == "RIFF" && string(sample[8:12]) == "WEBP":
		return "image/webp"
	case bytes.HasPrefix(sample, []byte("%PDF-")):
		return "application/pdf"
	}
	switch strings.ToLower(filepath.Ext(p)) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".pdf":
		return "application/pdf"
	}
	return ""
}

// instruction is an AGENTS.md-style file a read attaches.
type instruction struct{ path, content string }

var instructionNames = []string{"AGENTS.md", "CLAUDE.md", "CONTEXT.md"}

// instructions returns the instruction files that reading file attaches:
// walking up from its directory to (not including) the session directory,
// the first of AGENTS.md, CLAUDE.md, CONTEXT.md in each directory, unless
// the system prompt already has it, an earlier read attached it, or another
// read of the same step (message) claimed it.
func (s *session) instructions(step int, file string) []instruction {
	system := s.systemInstructions()
	s.mu.Lock()
	defer s.mu.Unlock()
	claims := s.claims[step]
	if claims == nil {
		claims = map[string]bool{}
		s.claims[step] = claims
	}
	var out []instruction
	for dir := filepath.Dir(file); strings.HasPrefix(dir, s.cwd) && dir != s.cwd; dir = filepath.Dir(dir) {
		var found string
		for _, n := range instructionNames {
			p := filepath.Join(dir, n)
			if _, err := os.Stat(p); err == nil {
				found = p
				break
			}
		}
		if found == "" || found == file || system[found] || s.loaded[found] || claims[found] {
			continue
		}
		claims[found] = true
		if b, err := os.ReadFile(found); err == nil && len(b) > 0 {
			out = append(out, instruction{path: found, content: "Instructions from: " + found + "\n" + string(b)})
			s.loaded[found] = true
		}
	}
	return out
}

// systemInstructions are the project instruction files OpenCode puts in the
// system prompt: every file of the first name found from the session
// directory up to the worktree.
func (s *session) systemInstructions() map[string]bool {
	out := map[string]bool{}
	for _, n := range instructionNames {
		for dir := s.cwd; ; dir = filepath.Dir(dir) {
			p := filepath.Join(dir, n)
			if _, err := os.Stat(p); err == nil {
				out[p] = true
			}
			if dir == s.worktree || dir == filepath.Dir(dir) {
				break
			}
		}
		if len(out) > 0 {
			break
		}
	}
	return out
}
