package opencode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// An export is one JSON document; it is walked message by message with a
// json.Decoder so memory stays bounded by the largest message, not the file.

// lineCounter counts the newlines handed to the decoder. Reads are capped so
// that the decoder's unread buffer stays small and the line of its current
// position is cheap to work out.
type lineCounter struct {
	r  io.Reader
	nl int
}

const maxRead = 64 << 10

func (c *lineCounter) Read(p []byte) (int, error) {
	if len(p) > maxRead {
		p = p[:maxRead]
	}
	n, err := c.r.Read(p)
	c.nl += bytes.Count(p[:n], []byte{'\n'})
	return n, err
}

// walker visits an export document's top-level members in file order.
type walker struct {
	lc  *lineCounter
	dec *json.Decoder
}

func newWalker(r io.Reader) *walker {
	lc := &lineCounter{r: r}
	return &walker{lc: lc, dec: json.NewDecoder(lc)}
}

// line is the 1-based line of the next token: the newlines read so far,
// less those the decoder holds unread after the token's first byte (the
// separators before it belong to the previous line).
func (w *walker) line() int {
	var buf [4096]byte
	n := 0
	inToken := false
	rd := w.dec.Buffered()
	for {
		k, err := rd.Read(buf[:])
		chunk := buf[:k]
		if !inToken {
			i := 0
			for i < len(chunk) && (chunk[i] == ' ' || chunk[i] == '\t' || chunk[i] == '\r' || chunk[i] == '\n' ||
				chunk[i] == ',' || chunk[i] == ':') {
				i++
			}
			if i < len(chunk) {
				inToken = true
			}
			chunk = chunk[i:]
		}
		n += bytes.Count(chunk, []byte{'\n'})
		if err != nil || k == 0 {
			break
		}
	}
	if !inToken {
		// The token has not been read yet: it starts after every newline so far.
		return w.lc.nl + 1
	}
	return w.lc.nl - n + 1
}

func (w *walker) jsonErr(line int, what string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: line,
			Msg: what + ": the document ends early", Hint: "was the export cut short? re-run `opencode export <session id>`"}
	}
	return trajectory.Errorf(line, "%s: not valid JSON: %v", what, err)
}

// walk calls member for every top-level key but "messages", and message for
// each element of "messages" with its index and starting line.
func (w *walker) walk(member func(key string, raw json.RawMessage) error,
	messagesStart, messagesEnd func() error,
	message func(i int, raw []byte, line int) error) error {
	tok, err := w.dec.Token()
	if err != nil {
		return w.jsonErr(1, "export document", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return trajectory.Errorf(1, "an OpenCode export must be a JSON object")
	}
	var raw json.RawMessage
	seenMessages := false
	for w.dec.More() {
		line := w.line()
		tok, err := w.dec.Token()
		if err != nil {
			return w.jsonErr(line, "export document", err)
		}
		key, _ := tok.(string)
		if key != "messages" {
			raw = raw[:0]
			if err := w.dec.Decode(&raw); err != nil {
				return w.jsonErr(line, fmt.Sprintf("member %q", key), err)
			}
			if err := member(key, raw); err != nil {
				return err
			}
			continue
		}
		if seenMessages {
			return trajectory.Errorf(line, "the export has two \"messages\" members")
		}
		seenMessages = true
		tok, err = w.dec.Token()
		if err != nil {
			return w.jsonErr(line, "messages", err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return trajectory.Errorf(line, "\"messages\" is not an array")
		}
		if err := messagesStart(); err != nil {
			return err
		}
		for i := 0; w.dec.More(); i++ {
			mline := w.line()
			raw = raw[:0]
			if err := w.dec.Decode(&raw); err != nil {
				return w.jsonErr(mline, fmt.Sprintf("messages[%d]", i), err)
			}
			if err := message(i, raw, mline); err != nil {
				return err
			}
		}
		if _, err := w.dec.Token(); err != nil {
			return w.jsonErr(w.line(), "messages", err)
		}
		if err := messagesEnd(); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil {
		return w.jsonErr(w.line(), "export document", err)
	}
	line := w.line()
	if _, err := w.dec.Token(); !errors.Is(err, io.EOF) {
		return trajectory.Errorf(line, "data after the end of the export document")
	}
	if !seenMessages {
		return trajectory.Errorf(1, "the export has no \"messages\" array")
	}
	return nil
}

// exportDecoder turns messages into Actions.
type exportDecoder struct {
	b *builder
	// ends[k] is the index of the last part of Actions[k]'s span in its
	// message, which is where a prefix after that step is cut.
	ends []int
}

func newExportDecoder(opts trajectory.Options) *exportDecoder {
	b := newBuilder(opts)
	b.fixedLoc = true
	b.t.Format = SubFormatExport
	return &exportDecoder{b: b}
}

func decodeExport(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	x := newExportDecoder(opts)
	w := newWalker(r)
	n := 0
	sawInfo := false
	err := w.walk(func(key string, raw json.RawMessage) error {
		if key == "info" {
			sawInfo = true
			return x.info(raw)
		}
		return nil
	}, func() error { return nil }, func() error { return nil },
		func(i int, raw []byte, line int) error {
			n++
			return x.message(i, raw, line)
		})
	if err != nil {
		return nil, err
	}
	if !sawInfo {
		return nil, trajectory.Errorf(1, "the export has no session \"info\"")
	}
	t := x.b.t
	t.Lines = n
	t.NumberSteps()
	return t, nil
}

func (x *exportDecoder) info(raw []byte) error {
	info := gjson.ParseBytes(raw)
	id := info.Get("id")
	if !info.IsObject() || id.Type != gjson.String || id.Str == "" {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: 1, Msg: "the export's info has no session id",
			Hint: "`opencode import` needs info.id (ses_…)"}
	}
	x.b.t.SessionID = id.Str
	x.b.t.Version = info.Get("version").Str
	x.b.t.Cwd = info.Get("directory").Str
	return nil
}

// message adds the steps of one message. An assistant message's parts are
// cut into spans at step-start parts; content before any step-start (old
// builds) opens a span of its own; a step-finish closes the span.
func (x *exportDecoder) message(i int, raw []byte, line int) error {
	m := gjson.Parse(view(raw))
	where := fmt.Sprintf("messages[%d]", i)
	if !m.IsObject() {
		return trajectory.Errorf(line, "%s is not an object", where)
	}
	info := m.Get("info")
	if !info.IsObject() {
		return trajectory.Errorf(line, "%s has no info object", where)
	}
	if id := info.Get("id"); id.Type != gjson.String || id.Str == "" {
		return trajectory.Errorf(line, "%s.info has no id", where)
	}
	parts := m.Get("parts")
	if !parts.IsArray() {
		return trajectory.Errorf(line, "%s has no parts array", where)
	}
	role := info.Get("role").Str
	if role != "user" && role != "assistant" {
		return trajectory.Errorf(line, "%s.info.role is %q, want \"user\" or \"assistant\"", where, clip(role))
	}
	b := x.b
	msgLoc := trajectory.Locator{Unit: "message", First: i, Last: i}
	var err error
	parts.ForEach(func(k, p gjson.Result) bool {
		j := int(k.Num)
		pline := line + bytes.Count(raw[:p.Index], []byte{'\n'})
		pwhere := fmt.Sprintf("%s.parts[%d]", where, j)
		if !p.IsObject() {
			err = trajectory.Errorf(pline, "%s is not an object", pwhere)
			return false
		}
		pt := p.Get("type")
		if pt.Type != gjson.String || pt.Str == "" {
			err = trajectory.Errorf(pline, "%s has no type", pwhere)
			return false
		}
		if id := p.Get("id"); id.Type != gjson.String || id.Str == "" {
			err = &trajectory.Error{Kind: trajectory.Malformed, Line: pline, Msg: pwhere + " has no id",
				Hint: "`opencode import` stores parts by id"}
			return false
		}
		if role == "user" {
			return true
		}
		loc := trajectory.Locator{Unit: "part", First: j, Last: j}
		switch pt.Str {
		case "step-start":
			x.open(msgLoc, j)
			return true
		case "text", "reasoning", "tool":
			if !b.isOpen() {
				x.open(msgLoc, j)
			}
		case "step-finish":
			if b.isOpen() {
				x.ends[b.cur] = j
				b.close()
			}
			return true
		}
		if !b.isOpen() {
			return true // parts between steps (patch, snapshot, …) belong to none
		}
		x.ends[b.cur] = j
		switch pt.Str {
		case "text":
			b.addText(p, false, loc)
		case "reasoning":
			b.addText(p, true, loc)
		case "tool":
			if msg := b.addTool(p, loc); msg != "" {
				err = trajectory.Errorf(pline, "%s: %s", pwhere, msg)
				return false
			}
		}
		return true
	})
	b.close()
	return err
}

func (x *exportDecoder) open(loc trajectory.Locator, part int) {
	x.b.open(loc)
	x.ends = append(x.ends, part)
}

// writeExportPrefix re-reads the export and writes it back with the
// messages after the boundary dropped and the boundary message's parts cut
// after the boundary step. Everything kept is copied as it was (compacted),
// including the message info, so `opencode import` loads it like the
// original. The steps are recomputed from src, and the boundary's calls
// must match t's, so a prefix is never cut from a different file.
func writeExportPrefix(out io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	return writeExport(out, src, size, t, afterStep, nil)
}

// writeExport is writeExportPrefix with an optional edit of each kept
// message's raw JSON (Rebuild replaces tool results there).
func writeExport(out io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int,
	edit func(raw []byte) ([]byte, error)) error {
	k := t.ActionIndex(afterStep)
	want := &t.Actions[k]
	x := newExportDecoder(trajectory.Options{SkipObservationContent: true})
	w := newWalker(io.NewSectionReader(src, 0, size))
	var buf bytes.Buffer
	first := true
	done := false
	sep := func() {
		if !first {
			buf.WriteByte(',')
		}
		first = false
	}
	flush := func() error {
		_, err := out.Write(buf.Bytes())
		buf.Reset()
		return err
	}
	buf.WriteByte('{')
	nMsg := 0
	err := w.walk(func(key string, raw json.RawMessage) error {
		sep()
		writeKey(&buf, key)
		if err := json.Compact(&buf, raw); err != nil {
			return err
		}
		return flush()
	}, func() error {
		sep()
		writeKey(&buf, "messages")
		buf.WriteString("[\n")
		return nil
	}, func() error {
		buf.WriteString("\n]")
		return flush()
	}, func(i int, raw []byte, line int) error {
		if done {
			return nil
		}
		if err := x.message(i, raw, line); err != nil {
			return err
		}
		if edit != nil {
			var err error
			if raw, err = edit(raw); err != nil {
				return err
			}
		}
		if nMsg > 0 {
			buf.WriteString(",\n")
		}
		nMsg++
		if len(x.b.t.Actions) <= k {
			if err := json.Compact(&buf, raw); err != nil {
				return err
			}
			return flush()
		}
		done = true
		got := &x.b.t.Actions[k]
		if got.Locator.First != i || !sameCalls(got.Calls, want.Calls) {
			return &trajectory.Error{Kind: trajectory.Malformed, Line: line,
				Msg:  fmt.Sprintf("step %d of the source is not the step that was decoded", afterStep),
				Hint: "decode the same file that is passed as the source"}
		}
		if err := writeCutMessage(&buf, raw, x.ends[k]); err != nil {
			return err
		}
		return flush()
	})
	if err != nil {
		return err
	}
	if !done {
		return &trajectory.Error{Kind: trajectory.Malformed,
			Msg:  fmt.Sprintf("step %d is not in the source", afterStep),
			Hint: "decode the same file that is passed as the source"}
	}
	buf.WriteString("}\n")
	return flush()
}

func sameCalls(a, b []trajectory.ToolCall) bool {
	return slices.EqualFunc(a, b, func(x, y trajectory.ToolCall) bool { return x.ID == y.ID && x.Name == y.Name })
}

func writeKey(buf *bytes.Buffer, key string) {
	k, _ := json.Marshal(key)
	buf.Write(k)
	buf.WriteByte(':')
}

// writeCutMessage writes the message with only parts[0..last].
func writeCutMessage(buf *bytes.Buffer, raw []byte, last int) error {
	m := gjson.Parse(view(raw))
	buf.WriteByte('{')
	first := true
	var err error
	m.ForEach(func(k, v gjson.Result) bool {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		writeKey(buf, k.Str)
		if k.Str != "parts" {
			err = json.Compact(buf, []byte(v.Raw))
			return err == nil
		}
		buf.WriteByte('[')
		v.ForEach(func(pk, p gjson.Result) bool {
			j := int(pk.Num)
			if j > last {
				return false
			}
			if j > 0 {
				buf.WriteByte(',')
			}
			err = json.Compact(buf, []byte(p.Raw))
			return err == nil
		})
		buf.WriteByte(']')
		return err == nil
	})
	buf.WriteByte('}')
	return err
}
