package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// StagePath is where Claude Code looks for session sessionID of a project
// started in cwd, under config directory configDir (CLAUDE_CONFIG_DIR):
// <configDir>/projects/<ProjectKey(cwd)>/<sessionID>.jsonl.
func StagePath(configDir, cwd, sessionID string) string {
	return filepath.Join(configDir, "projects", ProjectKey(cwd), sessionID+".jsonl")
}

// Rebuild implements trajectory.Replayer. It copies the same bytes as
// WritePrefix and rewrites, in each entry holding a result of steps
// 1..afterStep, only the tool_result's content and is_error and the
// entry's toolUseResult; every other byte, key order included, stays. A
// result whose fresh content and error flag equal the recorded ones keeps
// its content bytes (the recorded escaping), so a replay that reproduces
// every observation rebuilds the prefix byte for byte.
func (f *Format) Rebuild(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int, fresh map[string]trajectory.Fresh) error {
	end, err := prefixEnd(t, afterStep, size)
	if err != nil {
		return err
	}
	edits := map[int64]*lineEdit{}
	for _, a := range t.Steps() {
		if a.Step > afterStep {
			break
		}
		for i := range a.Calls {
			c := &a.Calls[i]
			fr, ok := fresh[c.ID]
			if !ok {
				return fmt.Errorf("claude: no fresh observation for call %s (%s) of step %d", c.ID, c.Name, a.Step)
			}
			loc := c.Observation.Locator
			e := edits[loc.StartByte]
			if e == nil {
				e = &lineEdit{start: loc.StartByte, end: loc.EndByte, line: loc.First,
					fresh: map[string]trajectory.Fresh{}, tools: map[string]string{}}
				edits[loc.StartByte] = e
			}
			e.fresh[c.ID] = fr
			e.tools[c.ID] = c.Name
		}
	}
	list := make([]*lineEdit, 0, len(edits))
	for _, e := range edits {
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].start < list[j].start })
	var pos int64
	for _, e := range list {
		if e.end > end {
			return fmt.Errorf("claude: result line %d ends past the boundary", e.line)
		}
		if _, err := io.Copy(w, io.NewSectionReader(src, pos, e.start-pos)); err != nil {
			return err
		}
		line := make([]byte, e.end-e.start)
		if _, err := src.ReadAt(line, e.start); err != nil {
			return err
		}
		out, err := e.rewrite(line)
		if err != nil {
			return fmt.Errorf("claude: line %d: %w", e.line, err)
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
		pos = e.end
	}
	if _, err := io.Copy(w, io.NewSectionReader(src, pos, end-pos)); err != nil {
		return err
	}
	if end > 0 {
		var last [1]byte
		if _, err := src.ReadAt(last[:], end-1); err != nil {
			return err
		}
		if last[0] != '\n' {
			_, err := w.Write([]byte{'\n'})
			return err
		}
	}
	return nil
}

// lineEdit is one user entry whose tool_result blocks get fresh results.
type lineEdit struct {
	start, end int64
	line       int
	fresh      map[string]trajectory.Fresh
	tools      map[string]string // call id -> tool name
}

// splice is a replacement of line[from:to].
type splice struct {
	from, to int
	with     []byte
}

func (e *lineEdit) rewrite(line []byte) ([]byte, error) {
	open := bytes.IndexByte(line, '{')
	if open < 0 {
		return nil, errors.New("not a JSON object")
	}
	top, _, err := members(line, open)
	if err != nil {
		return nil, err
	}
	var sp []splice
	msg, ok := find(top, "message")
	if !ok || line[msg.valStart] != '{' {
		return nil, errors.New("entry has no message object")
	}
	mm, _, err := members(line, msg.valStart)
	if err != nil {
		return nil, err
	}
	content, ok := find(mm, "content")
	if !ok || line[content.valStart] != '[' {
		return nil, errors.New("message has no content array")
	}
	blocks, err := elements(line, content.valStart)
	if err != nil {
		return nil, err
	}
	var native json.RawMessage
	seen, changed := 0, false
	for _, b := range blocks {
		if line[b.from] != '{' {
			continue
		}
		block := gjson.ParseBytes(line[b.from:b.to])
		if block.Get("type").Str != "tool_result" {
			continue
		}
		id := block.Get("tool_use_id").Str
		fr, ok := e.fresh[id]
		if !ok {
			continue
		}
		seen++
		if native == nil {
			native = fr.Native
		}
		bm, _, err := members(line, b.from)
		if err != nil {
			return nil, err
		}
		var bs []splice
		if origErr := block.Get("is_error").Type == gjson.True; origErr != fr.IsError {
			bs = []splice{{b.from, b.to, resultBlock(id, e.tools[id], fr)}}
		} else {
			bs, err = resultSplices(line, bm, block, fr)
		}
		if err != nil {
			return nil, err
		}
		changed = changed || len(bs) > 0
		sp = append(sp, bs...)
	}
	if seen != len(e.fresh) {
		return nil, fmt.Errorf("found %d of the %d tool_result blocks expected", seen, len(e.fresh))
	}
	// The entry's toolUseResult is the structured result of its (single)
	// tool_result. A fresh one replaces it; without one it is stale once
	// the result changed, and goes. An observation reused as it was keeps
	// the recorded one.
	if tur, ok := find(top, "toolUseResult"); ok {
		switch {
		case native != nil:
			sp = append(sp, splice{tur.valStart, tur.valEnd, native})
		case changed:
			sp = append(sp, removal(top, tur))
		}
	}
	return apply(line, sp), nil
}

// resultBlock is a tool_result block as Claude Code writes it: errors as
// {type, content, is_error, tool_use_id}, results as {tool_use_id, type,
// content} with Bash's is_error:false.
func resultBlock(id, tool string, fr trajectory.Fresh) []byte {
	var b bytes.Buffer
	if fr.IsError {
		b.WriteString(`{"type":"tool_result","content":`)
		b.Write(jsonString(fr.Content))
		b.WriteString(`,"is_error":true,"tool_use_id":`)
		b.Write(jsonString(id))
		b.WriteString("}")
		return b.Bytes()
	}
	b.WriteString(`{"tool_use_id":`)
	b.Write(jsonString(id))
	b.WriteString(`,"type":"tool_result","content":`)
	b.Write(jsonString(fr.Content))
	if tool == "Bash" {
		b.WriteString(`,"is_error":false`)
	}
	b.WriteString("}")
	return b.Bytes()
}

// resultSplices replaces one tool_result's content, its error flag
// unchanged.
func resultSplices(line []byte, bm []member, block gjson.Result, fr trajectory.Fresh) ([]splice, error) {
	var sp []splice
	c, ok := find(bm, "content")
	origText := resultText(block.Get("content"))
	if ok && origText != fr.Content {
		raw := line[c.valStart:c.valEnd]
		switch raw[0] {
		case '[':
			out, err := replaceTextBlocks(raw, fr.Content)
			if err != nil {
				return nil, err
			}
			sp = append(sp, splice{c.valStart, c.valEnd, out})
		default:
			sp = append(sp, splice{c.valStart, c.valEnd, jsonString(fr.Content)})
		}
	} else if !ok && fr.Content != "" {
		return nil, errors.New("tool_result has no content to replace")
	}
	return sp, nil
}

// replaceTextBlocks puts text into the first text block of a content
// array and drops the other text blocks (non-text blocks stay).
func replaceTextBlocks(raw []byte, text string) ([]byte, error) {
	els, err := elements(raw, 0)
	if err != nil {
		return nil, err
	}
	var sp []splice
	done := false
	for i, el := range els {
		v := gjson.ParseBytes(raw[el.from:el.to])
		if v.Get("type").Str != "text" {
			continue
		}
		if !done {
			bm, _, err := members(raw, el.from)
			if err != nil {
				return nil, err
			}
			if t, ok := find(bm, "text"); ok {
				sp = append(sp, splice{t.valStart, t.valEnd, jsonString(text)})
				done = true
				continue
			}
		}
		// Drop the element with the comma that separates it.
		from, to := el.from, el.to
		if i > 0 {
			from = els[i-1].to
		} else if i+1 < len(els) {
			to = els[i+1].from
		}
		sp = append(sp, splice{from, to, nil})
	}
	if !done {
		return append([]byte(`[{"type":"text","text":`), append(jsonString(text), "}]"...)...), nil
	}
	return apply(raw, sp), nil
}

// removal deletes a member and the comma that separates it.
func removal(ms []member, m member) splice {
	for i := range ms {
		if ms[i].keyStart != m.keyStart {
			continue
		}
		if i > 0 {
			return splice{ms[i-1].valEnd, m.valEnd, nil}
		}
		if i+1 < len(ms) {
			return splice{m.keyStart, ms[i+1].keyStart, nil}
		}
	}
	return splice{m.keyStart, m.valEnd, nil}
}

func apply(b []byte, sp []splice) []byte {
	sort.Slice(sp, func(i, j int) bool { return sp[i].from < sp[j].from })
	var out bytes.Buffer
	pos := 0
	for _, s := range sp {
		out.Write(b[pos:s.from])
		out.Write(s.with)
		pos = s.to
	}
	out.Write(b[pos:])
	return out.Bytes()
}

// member is one key of a JSON object, by byte offsets in the scanned text.
type member struct {
	key              string
	keyStart         int
	valStart, valEnd int
}

func find(ms []member, key string) (member, bool) {
	for _, m := range ms {
		if m.key == key {
			return m, true
		}
	}
	return member{}, false
}

// members scans the object starting at b[i].
func members(b []byte, i int) ([]member, int, error) {
	if i >= len(b) || b[i] != '{' {
		return nil, 0, errors.New("expected an object")
	}
	var ms []member
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return ms, i + 1, nil
	}
	for i < len(b) {
		ks := i
		ke, err := skipValue(b, i)
		if err != nil || b[ks] != '"' {
			return nil, 0, errors.New("bad object key")
		}
		var key string
		if err := json.Unmarshal(b[ks:ke], &key); err != nil {
			return nil, 0, err
		}
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return nil, 0, errors.New("expected ':'")
		}
		vs := skipSpace(b, i+1)
		ve, err := skipValue(b, vs)
		if err != nil {
			return nil, 0, err
		}
		ms = append(ms, member{key: key, keyStart: ks, valStart: vs, valEnd: ve})
		i = skipSpace(b, ve)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return ms, i + 1, nil
		}
		return nil, 0, errors.New("expected ',' or '}'")
	}
	return nil, 0, errors.New("unterminated object")
}

// span is one array element.
type span struct{ from, to int }

// elements scans the array starting at b[i].
func elements(b []byte, i int) ([]span, error) {
	if i >= len(b) || b[i] != '[' {
		return nil, errors.New("expected an array")
	}
	var out []span
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, nil
	}
	for i < len(b) {
		e, err := skipValue(b, i)
		if err != nil {
			return nil, err
		}
		out = append(out, span{i, e})
		i = skipSpace(b, e)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return out, nil
		}
		return nil, errors.New("expected ',' or ']'")
	}
	return nil, errors.New("unterminated array")
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("unexpected end of JSON")
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, errors.New("unterminated string")
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, err := skipValue(b, j)
				if err != nil {
					return 0, err
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("unterminated object or array")
	default:
		j := i
		for j < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[j])) {
			j++
		}
		if j == i {
			return 0, fmt.Errorf("unexpected %q", b[i])
		}
		return j, nil
	}
}
