package miniswe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
	"github.com/pvisor/pvisor/trajectory/miniswe/tmpl"
)

// Rebuild writes the prefix (as WritePrefix) with each replayed
// observation message re-rendered: its content, and in 2.x its extra's
// raw_output, returncode and exception fields. A rewritten message is laid
// out as mini's json.dumps(indent=2) lays it out; every other byte stays.
func (format) Rebuild(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int, fresh map[string]trajectory.Fresh) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	a, _ := t.Step(afterStep)
	last := a.Locator.Last
	byMsg := map[int]trajectory.Fresh{}
	for _, s := range t.Steps() {
		if s.Step > afterStep {
			break
		}
		for _, c := range s.Calls {
			f, ok := fresh[c.ID]
			if !ok {
				return fmt.Errorf("step %d: call %s has no fresh observation", s.Step, c.ID)
			}
			if !f.Reused {
				byMsg[c.Observation.Locator.First] = f
			}
		}
	}
	d, err := jsondoc.OpenRecords(io.NewSectionReader(src, 0, size), records)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(w, 64<<10)
	copied := int64(0) // src bytes written so far
	keep, end := int64(-1), int64(-1)
	for i := 0; d.More(); i++ {
		raw, _, err := d.Raw("messages")
		if err != nil {
			return err
		}
		start, stop := d.Span()
		end = stop
		if i > last {
			continue
		}
		if f, ok := byMsg[i]; ok {
			if err := copyRange(out, src, copied, start); err != nil {
				return err
			}
			msg, err := rewriteMessage(raw, indentBefore(src, start), f)
			if err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			out.Write(msg)
			copied = stop
		}
		if i == last {
			keep = stop
		}
	}
	if keep < 0 {
		return trajectory.Errorf(0, "the file changed since it was decoded: message %d is missing", last)
	}
	if err := copyRange(out, src, copied, keep); err != nil {
		return err
	}
	if err := copyRange(out, src, end, size); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("writing the mini-swe-agent session: %w", err)
	}
	return nil
}

func copyRange(w io.Writer, src io.ReaderAt, from, to int64) error {
	if to <= from {
		return nil
	}
	if _, err := io.Copy(w, io.NewSectionReader(src, from, to-from)); err != nil {
		return fmt.Errorf("reading the mini-swe-agent trajectory: %w", err)
	}
	return nil
}

// indentBefore is the whitespace between the start of off's line and off:
// the prefix json.Indent continues a rewritten message's lines with.
func indentBefore(src io.ReaderAt, off int64) string {
	n := min(off, 256)
	buf := make([]byte, n)
	if _, err := src.ReadAt(buf, off-n); err != nil {
		return ""
	}
	i := bytes.LastIndexByte(buf, '\n')
	ind := buf[i+1:]
	if len(bytes.Trim(ind, " ")) != 0 {
		return ""
	}
	return string(ind)
}

// member is one key of a JSON object with its raw value.
type member struct {
	key string
	raw json.RawMessage
}

func members(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{k, v})
	}
	return ms, nil
}

// rewriteMessage replaces an observation message's content (and 2.x
// extra fields from f.Native) and lays the message out with indent.
func rewriteMessage(raw []byte, indent string, f trajectory.Fresh) ([]byte, error) {
	ms, err := members(raw)
	if err != nil {
		return nil, err
	}
	content := json.RawMessage(tmpl.PyJSON(f.Content))
	var b bytes.Buffer
	b.WriteByte('{')
	seen := false
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(tmpl.PyJSON(m.key))
		b.WriteByte(':')
		v := m.raw
		switch m.key {
		case "content", "output": // output: a Responses API function_call_output
			if bytes.HasPrefix(bytes.TrimSpace(m.raw), []byte("[")) {
				return nil, fmt.Errorf("the observation's content is a list of parts (multimodal or cache-control); the replay writes plain text only")
			}
			v, seen = content, true
		case "extra":
			if f.Native != nil {
				if v, err = mergeExtra(m.raw, f.Native); err != nil {
					return nil, fmt.Errorf("extra: %w", err)
				}
			}
		}
		if err := json.Compact(&b, v); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	if !seen {
		return nil, fmt.Errorf("the observation message has no content")
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), indent, "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// dropped are extra keys mini adds only for failed executions: a fresh
// result that did not fail has none.
var dropped = map[string]bool{"exception_type": true, "exception": true}

// mergeExtra sets native's keys in extra, in place where extra has them
// and appended otherwise, and drops exception details native lacks.
func mergeExtra(extra, native json.RawMessage) (json.RawMessage, error) {
	old, err := members(extra)
	if err != nil {
		return nil, err
	}
	set, err := members(native)
	if err != nil {
		return nil, err
	}
	val := map[string]json.RawMessage{}
	for _, m := range set {
		val[m.key] = m.raw
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	put := func(k string, v json.RawMessage) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(tmpl.PyJSON(k))
		b.WriteByte(':')
		b.Write(v)
	}
	for _, m := range old {
		if v, ok := val[m.key]; ok {
			put(m.key, v)
			delete(val, m.key)
		} else if !dropped[m.key] {
			put(m.key, m.raw)
		}
	}
	for _, m := range set {
		if v, ok := val[m.key]; ok {
			put(m.key, v)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
