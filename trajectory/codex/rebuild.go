package codex

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// Rebuild writes the prefix WritePrefix writes, with payload.output of the
// function_call_output / custom_tool_call_output record of every call of
// steps 1..afterStep replaced by its fresh result. A record whose result
// did not change is copied as it was; a changed one gets its new value
// spliced in place of the old, so key order and every other byte of the
// line stay. The output keeps its JSON representation: a string stays a
// string (escaped as serde_json escapes), a content-item array keeps its
// non-text items with one input_text item in place of the text ones, and
// an object keeps its shape with its text member replaced.
//
// Rollout output records carry no error flag or structured side fields, so
// Fresh.IsError and Fresh.Native have nothing to replace. The event_msg
// records between a call and its output (exec_command_end, patch_apply_end,
// item_completed) are UI history the model never sees; they are copied as
// recorded.
func (format) Rebuild(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int, fresh map[string]trajectory.Fresh) error {
	var prefix bytes.Buffer
	if err := (format{}).WritePrefix(&prefix, src, size, t, afterStep); err != nil {
		return err
	}
	data := prefix.Bytes()
	type edit struct {
		start, end int64
		line       []byte
	}
	var edits []edit
	for _, a := range t.Steps() {
		if a.Step > afterStep {
			break
		}
		for i := range a.Calls {
			c := &a.Calls[i]
			f, ok := fresh[c.ID]
			if !ok {
				return fmt.Errorf("codex rebuild: step %d: no fresh result for call %s (%s)", a.Step, c.ID, c.Name)
			}
			o := c.Observation
			if o.Locator.EndByte > int64(len(data)) || o.Locator.StartByte < 0 {
				return fmt.Errorf("codex rebuild: call %s: result at %s lies outside the prefix", c.ID, o.Locator)
			}
			line := data[o.Locator.StartByte:o.Locator.EndByte]
			if same, err := unchanged(line, o, f); err != nil {
				return fmt.Errorf("codex rebuild: %s: %w", o.Locator, err)
			} else if same {
				continue
			}
			nl, err := replaceOutput(line, f.Content)
			if err != nil {
				return fmt.Errorf("codex rebuild: %s: %w", o.Locator, err)
			}
			edits = append(edits, edit{o.Locator.StartByte, o.Locator.EndByte, nl})
		}
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var pos int64
	for _, e := range edits {
		if _, err := w.Write(data[pos:e.start]); err != nil {
			return err
		}
		if _, err := w.Write(e.line); err != nil {
			return err
		}
		pos = e.end
	}
	_, err := w.Write(data[pos:])
	return err
}

// unchanged reports whether the record already holds f's content. The
// decoded content is compared when the decode kept it; a lean decode
// compares with the record's own text.
func unchanged(line []byte, o *trajectory.Observation, f trajectory.Fresh) (bool, error) {
	if o.Content != "" || f.Content == "" {
		return o.Content == f.Content, nil
	}
	raw, _, err := outputRange(line)
	if err != nil {
		return false, err
	}
	got, _ := outputContent(gjson.Parse(raw))
	return got == f.Content, nil
}

// outputRange finds payload.output in a record line: its raw JSON and the
// byte offsets of the value.
func outputRange(line []byte) (string, [2]int, error) {
	s := string(line)
	i := strings.IndexByte(s, '{')
	if i < 0 {
		return "", [2]int{}, fmt.Errorf("not a JSON record")
	}
	p, ok := member(s, i, "payload")
	if !ok || s[p] != '{' {
		return "", [2]int{}, fmt.Errorf("record has no payload object")
	}
	v, ok := member(s, p, "output")
	if !ok {
		return "", [2]int{}, fmt.Errorf("output record has no payload.output")
	}
	end := skipValue(s, v)
	return s[v:end], [2]int{v, end}, nil
}

// replaceOutput returns line with payload.output holding content.
func replaceOutput(line []byte, content string) ([]byte, error) {
	raw, at, err := outputRange(line)
	if err != nil {
		return nil, err
	}
	val := newOutputValue(raw, content)
	out := make([]byte, 0, len(line)-len(raw)+len(val))
	out = append(out, line[:at[0]]...)
	out = append(out, val...)
	return append(out, line[at[1]:]...), nil
}

// newOutputValue renders content in the representation of the old value.
func newOutputValue(old, content string) string {
	v := gjson.Parse(old)
	switch {
	case v.IsArray():
		var items []string
		placed := false
		v.ForEach(func(_, it gjson.Result) bool {
			switch it.Get("type").Str {
			case "input_text", "output_text", "text":
				if !placed {
					items = append(items, `{"type":"input_text","text":`+serdeString(content)+`}`)
					placed = true
				}
			default:
				items = append(items, it.Raw)
			}
			return true
		})
		if !placed {
			items = append([]string{`{"type":"input_text","text":` + serdeString(content) + `}`}, items...)
		}
		return "[" + strings.Join(items, ",") + "]"
	case v.IsObject():
		for _, key := range []string{"content", "text"} {
			if m := v.Get(key); m.Type == gjson.String {
				return old[:m.Index] + serdeString(content) + old[m.Index+len(m.Raw):]
			}
		}
	}
	return serdeString(content)
}
