package pi

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
)

// CheckRebuild refuses `pi --mode json` event streams: pi resumes only from
// a session file, so there is nothing to rebuild.
func (format) CheckRebuild(t *trajectory.Trajectory) error {
	if t.Format == SubFormatEvents {
		return &trajectory.Error{Kind: trajectory.Unsupported,
			Msg:  "this is `pi --mode json` output; replaying and continuing a pi session needs the session file pi wrote",
			Hint: "pass the session file from ~/.pi/agent/sessions/--<cwd>--/ (its first line is {\"type\":\"session\",…}), or use --prepare-only"}
	}
	return nil
}

// Rebuild writes the session file up to the boundary (the bytes
// WritePrefix writes) with the toolResult entry of every call in steps
// 1..afterStep carrying its fresh result: the message's content blocks,
// details and isError are replaced, every other byte of the file (ids,
// parentIds, timestamps, key order) stays as it was. Only session files
// can be rebuilt; pi resumes from those, not from --mode json output.
//
// A reused Fresh (a recorded observation kept for a call that could not be
// re-run) keeps its entry byte for byte, details included.
func (format) Rebuild(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int, fresh map[string]trajectory.Fresh) error {
	if err := (format{}).CheckRebuild(t); err != nil {
		return err
	}
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	a, _ := t.Step(afterStep)
	end := a.Locator.EndByte
	if a.Locator.Unit != "line" || end <= 0 || end > size {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: a.Locator.Last,
			Msg:  fmt.Sprintf("step %d does not point at bytes of this file", afterStep),
			Hint: "decode the same file that is passed as the source"}
	}
	type target struct {
		call *trajectory.ToolCall
		f    trajectory.Fresh
	}
	var targets []target
	for _, st := range t.Steps() {
		if st.Step > afterStep {
			break
		}
		for i := range st.Calls {
			c := &st.Calls[i]
			f, ok := fresh[c.ID]
			if !ok || c.Observation == nil {
				continue
			}
			o := c.Observation
			if f.Reused {
				continue // reused: keep the recorded entry as it is
			}
			if o.Locator.Unit != "line" || o.Locator.StartByte < 0 || o.Locator.EndByte > end {
				return fmt.Errorf("pi: result of call %s is not a line before the boundary", c.ID)
			}
			targets = append(targets, target{c, f})
		}
	}
	sort.Slice(targets, func(i, j int) bool {
		return targets[i].call.Observation.Locator.StartByte < targets[j].call.Observation.Locator.StartByte
	})
	var pos int64
	for _, tg := range targets {
		loc := tg.call.Observation.Locator
		if loc.StartByte < pos {
			return fmt.Errorf("pi: results of two calls share line %d", loc.First)
		}
		if _, err := io.Copy(w, io.NewSectionReader(src, pos, loc.StartByte-pos)); err != nil {
			return err
		}
		line := make([]byte, loc.EndByte-loc.StartByte)
		if _, err := src.ReadAt(line, loc.StartByte); err != nil {
			return err
		}
		out, err := rewriteResult(line, tg.call.ID, tg.f)
		if err != nil {
			return fmt.Errorf("pi: line %d: %w", loc.First, err)
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
		pos = loc.EndByte
	}
	_, err := io.Copy(w, io.NewSectionReader(src, pos, end-pos))
	return err
}

// rewriteResult replaces content, details and isError in the message of
// one toolResult entry line (with its line ending).
func rewriteResult(line []byte, callID string, f trajectory.Fresh) ([]byte, error) {
	body := bytes.TrimRight(line, "\r\n")
	eol := line[len(body):]
	msg := gjson.GetBytes(body, "message")
	if !msg.IsObject() || msg.Index <= 0 {
		return nil, fmt.Errorf("not a message entry")
	}
	if msg.Get("role").Str != "toolResult" || msg.Get("toolCallId").Str != callID {
		return nil, fmt.Errorf("not the toolResult of call %s", callID)
	}
	type member struct{ key, val string }
	var members []member
	msg.ForEach(func(k, v gjson.Result) bool {
		members = append(members, member{k.Raw, v.Raw})
		return true
	})
	content := freshContent(msg.Get("content"), f.Content)
	isErr := "false"
	if f.IsError {
		isErr = "true"
	}
	var out []member
	var hasDetails, hasIsError bool
	after := -1 // index in out after which details/isError go when missing
	for _, m := range members {
		switch unquoteKey(m.key) {
		case "content":
			out = append(out, member{m.key, content})
			after = len(out) - 1
		case "details":
			if hasDetails {
				continue // already written before isError
			}
			hasDetails = true
			if f.Native != nil {
				out = append(out, member{m.key, string(f.Native)})
				after = len(out) - 1
			}
		case "isError":
			hasIsError = true
			if !hasDetails && f.Native != nil {
				out = append(out, member{`"details"`, string(f.Native)})
				hasDetails = true
			}
			out = append(out, member{m.key, isErr})
		default:
			out = append(out, m)
		}
	}
	insert := func(m member) {
		i := after + 1
		if after < 0 {
			i = len(out)
		}
		out = append(out[:i], append([]member{m}, out[i:]...)...)
		after = i
	}
	if !hasDetails && f.Native != nil {
		insert(member{`"details"`, string(f.Native)})
	}
	if !hasIsError {
		insert(member{`"isError"`, isErr})
	}
	var b bytes.Buffer
	b.Grow(len(line) + len(content))
	b.Write(body[:msg.Index])
	b.WriteByte('{')
	for i, m := range out {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(m.key)
		b.WriteByte(':')
		b.WriteString(m.val)
	}
	b.WriteByte('}')
	b.Write(body[msg.Index+len(msg.Raw):])
	b.Write(eol)
	return b.Bytes(), nil
}

func unquoteKey(raw string) string {
	return gjson.Parse(raw).Str
}

// freshContent is the content value for text: one text block, as pi's
// tools return it (a string when the recorded content was a string). The
// image blocks of a recorded image read are kept after the new text note,
// since the replay does not re-encode images.
func freshContent(orig gjson.Result, text string) string {
	if orig.Type == gjson.String {
		return string(jsstr.AppendQuote(nil, text))
	}
	var o jsObject
	o.str("type", "text")
	o.str("text", text)
	parts := []string{string(o.bytes())}
	if strings.HasPrefix(text, "Read image file [") {
		orig.ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "image" {
				parts = append(parts, b.Raw)
			}
			return true
		})
	}
	return "[" + strings.Join(parts, ",") + "]"
}
