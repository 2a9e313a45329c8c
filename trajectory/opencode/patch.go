package opencode

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	"github.com/pvisor/pvisor/trajectory/internal/linediff"
)

// OpenCode's apply_patch tool (offered to GPT models instead of edit and
// write) and the older patch tool. OpenCode parses the envelope itself,
// more leniently than Codex: lines it does not understand are skipped, and
// update chunks are located with four levels of fuzz (exact, trailing
// whitespace, surrounding whitespace, typographic punctuation).

type patchHunk struct {
	kind     string // add, delete, update
	path     string
	movePath string
	contents string
	chunks   []patchChunk
}

type patchChunk struct {
	oldLines, newLines []string
	context            string
	eof                bool
}

var heredoc = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:cat\s+)?<<['"]?(\w+)['"]?\s*\n([\s\S]*?)\n(\w+)\s*$`)
})

func parsePatch(text string) ([]patchHunk, string) {
	text = jsstr.Trim(text)
	if m := heredoc().FindStringSubmatch(text); m != nil && m[1] == m[3] {
		text = m[2]
	}
	lines := strings.Split(text, "\n")
	begin, end := -1, -1
	for i, l := range lines {
		if begin < 0 && jsstr.Trim(l) == "*** Begin Patch" {
			begin = i
		}
		if end < 0 && jsstr.Trim(l) == "*** End Patch" {
			end = i
		}
	}
	if begin < 0 || end < 0 || begin >= end {
		return nil, "Invalid patch format: missing Begin/End markers"
	}
	var hunks []patchHunk
	for i := begin + 1; i < end; {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "*** Add File:"):
			p := jsstr.Trim(l[13:])
			if p == "" {
				i++
				continue
			}
			var b strings.Builder
			i++
			for i < len(lines) && !strings.HasPrefix(lines[i], "***") {
				if strings.HasPrefix(lines[i], "+") {
					b.WriteString(lines[i][1:] + "\n")
				}
				i++
			}
			hunks = append(hunks, patchHunk{kind: "add", path: p, contents: strings.TrimSuffix(b.String(), "\n")})
		case strings.HasPrefix(l, "*** Delete File:"):
			p := jsstr.Trim(l[16:])
			i++
			if p != "" {
				hunks = append(hunks, patchHunk{kind: "delete", path: p})
			}
		case strings.HasPrefix(l, "*** Update File:"):
			h := patchHunk{kind: "update", path: jsstr.Trim(l[16:])}
			i++
			if i < len(lines) && strings.HasPrefix(lines[i], "*** Move to:") {
				h.movePath = jsstr.Trim(lines[i][12:])
				i++
			}
			for i < len(lines) && !strings.HasPrefix(lines[i], "***") {
				if !strings.HasPrefix(lines[i], "@@") {
					i++
					continue
				}
				c := patchChunk{context: jsstr.Trim(lines[i][2:])}
				i++
				for i < len(lines) && !strings.HasPrefix(lines[i], "@@") && !strings.HasPrefix(lines[i], "***") {
					if lines[i] == "*** End of File" {
						c.eof = true
						i++
						break
					}
					switch ln := lines[i]; {
					case strings.HasPrefix(ln, " "):
						c.oldLines = append(c.oldLines, ln[1:])
						c.newLines = append(c.newLines, ln[1:])
					case strings.HasPrefix(ln, "-"):
						c.oldLines = append(c.oldLines, ln[1:])
					case strings.HasPrefix(ln, "+"):
						c.newLines = append(c.newLines, ln[1:])
					}
					i++
				}
				h.chunks = append(h.chunks, c)
			}
			if h.path != "" {
				hunks = append(hunks, h)
			}
		default:
			i++
		}
	}
	return hunks, ""
}

// deriveContent applies an update's chunks to content (BOM kept apart).
func deriveContent(path string, chunks []patchChunk, content string) (string, bool, string) {
	hasBOM, text := splitBOM(content)
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type repl struct {
		at, n int
		with  []string
	}
	var reps []repl
	from := 0
	for _, c := range chunks {
		if c.context != "" {
			i := seekLines(lines, []string{c.context}, from, false)
			if i < 0 {
				return "", false, "Failed to find context '" + c.context + "' in " + path
			}
			from = i + 1
		}
		if len(c.oldLines) == 0 {
			at := len(lines)
			if len(lines) > 0 && lines[len(lines)-1] == "" {
				at--
			}
			reps = append(reps, repl{at, 0, c.newLines})
			continue
		}
		old, nw := c.oldLines, c.newLines
		i := seekLines(lines, old, from, c.eof)
		if i < 0 && old[len(old)-1] == "" {
			old = old[:len(old)-1]
			if len(nw) > 0 && nw[len(nw)-1] == "" {
				nw = nw[:len(nw)-1]
			}
			i = seekLines(lines, old, from, c.eof)
		}
		if i < 0 {
			return "", false, "Failed to find expected lines in " + path + ":\n" + strings.Join(c.oldLines, "\n")
		}
		reps = append(reps, repl{i, len(old), nw})
		from = i + len(old)
	}
	for k := 1; k < len(reps); k++ {
		for j := k; j > 0 && reps[j].at < reps[j-1].at; j-- {
			reps[j], reps[j-1] = reps[j-1], reps[j]
		}
	}
	out := append([]string(nil), lines...)
	for k := len(reps) - 1; k >= 0; k-- {
		r := reps[k]
		tail := append(append([]string(nil), r.with...), out[min(r.at+r.n, len(out)):]...)
		out = append(out[:min(r.at, len(out))], tail...)
	}
	if len(out) == 0 || out[len(out)-1] != "" {
		out = append(out, "")
	}
	newBOM, res := splitBOM(strings.Join(out, "\n"))
	return res, hasBOM || newBOM, ""
}

var punct = strings.NewReplacer("\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'",
	"\u201C", `"`, "\u201D", `"`, "\u201E", `"`, "\u201F", `"`,
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-",
	"\u2026", "...", "\u00A0", " ")

func seekLines(lines, want []string, from int, eof bool) int {
	if len(want) == 0 {
		return -1
	}
	eqs := []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool { return jsstr.TrimEnd(a) == jsstr.TrimEnd(b) },
		func(a, b string) bool { return jsstr.Trim(a) == jsstr.Trim(b) },
		func(a, b string) bool { return punct.Replace(jsstr.Trim(a)) == punct.Replace(jsstr.Trim(b)) },
	}
	at := func(i int, eq func(a, b string) bool) bool {
		for k := range want {
			if !eq(lines[i+k], want[k]) {
				return false
			}
		}
		return true
	}
	for _, eq := range eqs {
		if eof {
			if i := len(lines) - len(want); i >= from && at(i, eq) {
				return i
			}
		}
		for i := from; i <= len(lines)-len(want); i++ {
			if at(i, eq) {
				return i
			}
		}
	}
	return -1
}

type fileChange struct {
	path, movePath, kind string
	oldText, newText     string
	bom                  bool
	diff                 string
	adds, dels           int
}

func (s *session) applyPatch(tool string, args gjson.Result) (result, error) {
	text := s.mapText(args.Get("patchText").Str)
	if text == "" {
		return toolError("patchText is required"), nil
	}
	fail := "apply_patch verification failed: "
	if tool == "patch" {
		fail = "Failed to parse patch: "
	}
	hunks, perr := parsePatch(text)
	if perr != "" {
		return toolError(fail + "Error: " + perr), nil
	}
	if len(hunks) == 0 {
		if tool == "patch" {
			return toolError("No file changes found in patch"), nil
		}
		norm := strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
		if jsstr.Trim(norm) == "*** Begin Patch\n*** End Patch" {
			return toolError("patch rejected: empty patch"), nil
		}
		return toolError("apply_patch verification failed: no hunks found"), nil
	}
	var changes []fileChange
	var diffs strings.Builder
	for _, h := range hunks {
		p := s.resolve(h.path)
		c := fileChange{path: p, kind: h.kind}
		switch h.kind {
		case "add":
			body := h.contents
			if body != "" && !strings.HasSuffix(body, "\n") {
				body += "\n"
			}
			c.bom, c.newText = splitBOM(body)
			c.diff = twoFilesPatch(p, "", c.newText)
			c.adds, c.dels = linediff.Changes("", c.newText)
		case "update":
			st, err := os.Stat(p)
			if err != nil || st.IsDir() {
				return toolError("apply_patch verification failed: Failed to read file to update: " + p), nil
			}
			f, err := run.ReadFile(p)
			if err != nil {
				return toolError("apply_patch verification failed: Failed to read file to update: " + p), nil
			}
			b, old := splitBOM(jsstr.Decode(f.Content))
			nw, nb, msg := deriveContent(p, h.chunks, withBOM(old, b))
			if msg != "" {
				return toolError("apply_patch verification failed: Error: " + msg), nil
			}
			c.oldText, c.newText, c.bom = old, nw, nb
			c.diff = twoFilesPatch(p, old, nw)
			c.adds, c.dels = linediff.Changes(old, nw)
			if h.movePath != "" {
				c.kind, c.movePath = "move", s.resolve(h.movePath)
			}
		case "delete":
			f, err := run.ReadFile(p)
			if err != nil {
				return toolError("apply_patch verification failed: " + platformError("readFile", p, err)), nil
			}
			b, old := splitBOM(jsstr.Decode(f.Content))
			c.oldText, c.bom = old, b
			c.diff = twoFilesPatch(p, old, "")
			c.dels = strings.Count(old, "\n") + 1
		}
		diffs.WriteString(c.diff + "\n")
		changes = append(changes, c)
	}
	for _, c := range changes {
		var err error
		switch c.kind {
		case "add", "update":
			_, err = run.WriteFile(c.path, []byte(withBOM(c.newText, c.bom)))
		case "move":
			if _, err = run.WriteFile(c.movePath, []byte(withBOM(c.newText, c.bom))); err == nil {
				if err = run.GuardWrite("unlink", c.path); err == nil {
					err = os.Remove(c.path)
				}
				if err == nil {
					run.NoteWrite(c.path)
				}
			}
		case "delete":
			if err = run.GuardWrite("unlink", c.path); err == nil {
				err = os.Remove(c.path)
			}
			if err == nil {
				run.NoteWrite(c.path)
			}
		}
		if err != nil {
			return toolError(platformError("writeFile", c.path, err)), nil
		}
	}
	if tool == "patch" {
		return s.patchSummary(changes, diffs.String()), nil
	}
	var lines []string
	var files []jobj
	for _, c := range changes {
		target := c.path
		if c.movePath != "" {
			target = c.movePath
		}
		switch c.kind {
		case "add":
			lines = append(lines, "A "+s.rel(c.path))
		case "delete":
			lines = append(lines, "D "+s.rel(c.path))
		default:
			lines = append(lines, "M "+s.rel(target))
		}
		f := jobj{{"filePath", c.path}, {"relativePath", s.rel(target)}, {"type", c.kind}, {"patch", c.diff},
			{"additions", c.adds}, {"deletions", c.dels}}
		if c.movePath != "" {
			f = append(f, jkv{"movePath", c.movePath})
		}
		files = append(files, f)
	}
	out := "Success. Updated the following files:\n" + strings.Join(lines, "\n")
	r := result{output: out, title: out}
	r.metadata = jobj{{"diff", diffs.String()}, {"files", files}, {"diagnostics", jobj{}}}
	return r, nil
}

// patchSummary is the older patch tool's report.
func (s *session) patchSummary(changes []fileChange, diff string) result {
	var rels []string
	for _, c := range changes {
		p := c.path
		if c.movePath != "" {
			p = c.movePath
		}
		rels = append(rels, "  "+s.rel(p))
	}
	summary := strconv.Itoa(len(changes)) + " files changed"
	r := result{output: "Patch applied successfully. " + summary + ":\n" + strings.Join(rels, "\n"), title: summary}
	r.metadata = jobj{{"diff", diff}}
	return r
}

// todowrite reports the list back as JSON.stringify(todos, null, 2) of the
// decoded items: content, status and priority; other keys (an id, which
// versions before 1.2 kept) are dropped by the schema.
func (s *session) todowrite(args gjson.Result) result {
	var list bytes.Buffer
	list.WriteByte('[')
	for i, t := range args.Get("todos").Array() {
		if i > 0 {
			list.WriteByte(',')
		}
		list.WriteByte('{')
		n := 0
		for _, k := range []string{"content", "status", "priority"} {
			v := t.Get(k)
			if !v.Exists() {
				continue
			}
			if n > 0 {
				list.WriteByte(',')
			}
			writeJSString(&list, k)
			list.WriteByte(':')
			stringifyJS(&list, v, 0, 0)
			n++
		}
		list.WriteByte('}')
	}
	list.WriteByte(']')
	s.mu.Lock()
	s.todos = list.Bytes()
	s.mu.Unlock()
	return todoResult(list.Bytes())
}

func (s *session) todoread() result {
	s.mu.Lock()
	list := s.todos
	s.mu.Unlock()
	if list == nil {
		list = []byte("[]")
	}
	return todoResult(list)
}

func todoResult(list []byte) result {
	todos := gjson.ParseBytes(list)
	open := 0
	for _, t := range todos.Array() {
		if t.Get("status").Str != "completed" {
			open++
		}
	}
	var pretty bytes.Buffer
	stringifyJS(&pretty, todos, 2, 0)
	r := result{output: pretty.String(), title: strconv.Itoa(open) + " todos"}
	r.metadata = jobj{{"todos", json.RawMessage(list)}}
	return r
}
