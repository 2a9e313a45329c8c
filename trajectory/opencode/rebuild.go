package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// Rebuild writes the session through step afterStep as an `opencode export`
// document (what `opencode import` loads) with the fresh results in place.
//
// For an export input the document is exactly WritePrefix's, except in the
// tool parts of steps 1..afterStep: state.output (or state.error) holds
// Fresh.Content, state.status follows Fresh.IsError, and state.title,
// state.metadata and image attachments come from Fresh.Native (an object
// {"title", "metadata", "attachments"} as Execute produces it). Ids, times
// and every other field stay as they were; a state whose fresh values equal
// the recorded ones keeps its bytes, and so does a result without Native
// whose text and status are the recorded ones (a reused, stale result).
//
// A run-event stream has no document to copy: Rebuild synthesizes one (see
// RebuildEvents). Its extension is always "json" (RebuildExt), while the
// prefix of a run-event stream is "jsonl".
func (format) Rebuild(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int,
	fresh map[string]trajectory.Fresh) error {
	return RebuildWith(w, src, size, t, afterStep, fresh, SynthOptions{})
}

// RebuildExt is the extension of the file Rebuild writes: always "json".
func (format) RebuildExt(*trajectory.Trajectory) string { return "json" }

// RebuildWith is Rebuild with the options used when the input is a
// run-event stream (ignored for an export).
func RebuildWith(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int,
	fresh map[string]trajectory.Fresh, opts SynthOptions) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	repl := replacements(t, afterStep, fresh)
	if t.Format == SubFormatExport {
		return writeExport(w, src, size, t, afterStep, func(raw []byte) ([]byte, error) {
			return editParts(raw, "parts", repl)
		})
	}
	return synthesize(w, src, size, t, afterStep, repl, opts)
}

// replacements are the fresh results of the calls of steps 1..afterStep.
func replacements(t *trajectory.Trajectory, afterStep int, fresh map[string]trajectory.Fresh) map[string]trajectory.Fresh {
	out := map[string]trajectory.Fresh{}
	for _, a := range t.Steps() {
		if a.Step > afterStep {
			break
		}
		for _, c := range a.Calls {
			if f, ok := fresh[c.ID]; ok {
				out[c.ID] = f
			}
		}
	}
	return out
}

// editParts replaces the state of every tool part in the array at path of
// the JSON object raw whose callID has a fresh result.
func editParts(raw []byte, path string, repl map[string]trajectory.Fresh) ([]byte, error) {
	if len(repl) == 0 {
		return raw, nil
	}
	parts := gjson.GetBytes(raw, path)
	if !parts.IsArray() {
		return raw, nil
	}
	type splice struct {
		from, to int
		with     []byte
	}
	var edits []splice
	var err error
	// Indexes of values found from a parsed element are offsets in raw.
	parts.ForEach(func(_, p gjson.Result) bool {
		if p.Get("type").Str != "tool" {
			return true
		}
		id := p.Get("callID").Str
		f, ok := repl[id]
		if !ok {
			return true
		}
		st := p.Get("state")
		if !st.IsObject() || st.Index <= 0 || st.Index+len(st.Raw) > len(raw) || string(raw[st.Index:st.Index+len(st.Raw)]) != st.Raw {
			err = fmt.Errorf("tool part %s has no state to replace", id)
			return false
		}
		tool := p.Get("tool").Str
		ns, e := newState(st, f, tool == "apply_patch" || tool == "patch")
		if e != nil {
			err = fmt.Errorf("tool part %s: %w", id, e)
			return false
		}
		edits = append(edits, splice{st.Index, st.Index + len(st.Raw), ns})
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(edits) == 0 {
		return raw, nil
	}
	var out bytes.Buffer
	out.Grow(len(raw))
	at := 0
	for _, e := range edits {
		out.Write(raw[at:e.from])
		out.Write(e.with)
		at = e.to
	}
	out.Write(raw[at:])
	return out.Bytes(), nil
}

// newState is the tool state with the fresh result. Keys keep their order;
// a value that did not change keeps its bytes. A recorded title stays
// unless the tool derives it from its output (titleFromOutput): the other
// tools title a call after its input, and older versions did so in their
// own way (bash used the description).
func newState(st gjson.Result, f trajectory.Fresh, titleFromOutput bool) ([]byte, error) {
	var native gjson.Result
	if len(f.Native) > 0 {
		native = gjson.ParseBytes(f.Native)
		if !native.IsObject() {
			return nil, fmt.Errorf("Fresh.Native is not a JSON object")
		}
	}
	title, meta, attach := native.Get("title"), native.Get("metadata"), native.Get("attachments")
	status := st.Get("status").Str
	want := "completed"
	if f.IsError {
		want = "error"
	}
	// A result reused as recorded (the engine's stale observations carry
	// no Native) keeps its whole state: nothing in it is stale.
	if len(f.Native) == 0 && status == want {
		if cur := st.Get(map[bool]string{true: "error", false: "output"}[f.IsError]); cur.Type == gjson.String && cur.Str == f.Content {
			return []byte(st.Raw), nil
		}
	}
	var b bytes.Buffer
	key := func(k string) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		writeJSString(&b, k)
		b.WriteByte(':')
	}
	str := func(orig gjson.Result, s string) {
		if orig.Type == gjson.String && orig.Str == s {
			b.WriteString(orig.Raw)
			return
		}
		writeJSString(&b, s)
	}
	value := func(orig, v gjson.Result) {
		if orig.Exists() && sameJSON(orig, v) {
			b.WriteString(orig.Raw)
			return
		}
		stringifyJS(&b, v, 0, 0)
	}
	b.WriteByte('{')
	if status == want {
		wroteMeta, wroteTitle := false, false
		addTitle := func() {
			if want == "completed" && !wroteTitle && title.Type == gjson.String {
				key("title")
				writeJSString(&b, title.Str)
				wroteTitle = true
			}
		}
		st.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "output":
				key("output")
				str(v, f.Content)
			case "error":
				key("error")
				str(v, f.Content)
			case "title":
				wroteTitle = true
				key("title")
				if title.Type == gjson.String && titleFromOutput {
					str(v, title.Str)
				} else {
					b.WriteString(v.Raw)
				}
			case "metadata":
				wroteMeta = true
				switch {
				case meta.IsObject():
					key("metadata")
					value(v, meta)
				case want == "completed":
					key("metadata")
					value(v, gjson.Parse("{}"))
				}
			case "attachments":
				key("attachments")
				writeAttachments(&b, v, attach)
			case "time":
				if !wroteMeta && meta.IsObject() {
					key("metadata")
					stringifyJS(&b, meta, 0, 0)
					wroteMeta = true
				}
				addTitle()
				key("time")
				b.WriteString(v.Raw)
			default:
				key(k.Str)
				b.WriteString(v.Raw)
			}
			return true
		})
		if !wroteMeta && meta.IsObject() {
			key("metadata")
			stringifyJS(&b, meta, 0, 0)
		}
		addTitle()
		b.WriteByte('}')
		return b.Bytes(), nil
	}
	// The status changes: write the state the tool would have produced,
	// keeping its input and time.
	key("status")
	writeJSString(&b, want)
	key("input")
	if in := st.Get("input"); in.Exists() {
		b.WriteString(in.Raw)
	} else {
		b.WriteString("{}")
	}
	if want == "error" {
		key("error")
		writeJSString(&b, f.Content)
		if meta.IsObject() {
			key("metadata")
			stringifyJS(&b, meta, 0, 0)
		}
	} else {
		key("output")
		writeJSString(&b, f.Content)
		key("metadata")
		if meta.IsObject() {
			stringifyJS(&b, meta, 0, 0)
		} else {
			b.WriteString("{}")
		}
		key("title")
		writeJSString(&b, title.Str)
	}
	key("time")
	if tm := st.Get("time"); tm.IsObject() {
		writeTime(&b, tm)
	} else {
		b.WriteString(`{"start":0,"end":0}`)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeTime keeps start and end of a state's time (a running state has no
// end: it gets the start).
func writeTime(b *bytes.Buffer, tm gjson.Result) {
	start := tm.Get("start")
	end := tm.Get("end")
	if !end.Exists() {
		end = start
	}
	b.WriteString(`{"start":` + orZero(start) + `,"end":` + orZero(end) + `}`)
}

func orZero(r gjson.Result) string {
	if r.Type == gjson.Number {
		return r.Raw
	}
	return "0"
}

// writeAttachments keeps the recorded attachment parts (their ids) with the
// fresh MIME type and data URL.
func writeAttachments(b *bytes.Buffer, orig, fresh gjson.Result) {
	fa := fresh.Array()
	if len(fa) == 0 {
		b.WriteString(orig.Raw)
		return
	}
	b.WriteByte('[')
	for i, a := range orig.Array() {
		if i > 0 {
			b.WriteByte(',')
		}
		if i >= len(fa) {
			b.WriteString(a.Raw)
			continue
		}
		b.WriteByte('{')
		n := 0
		a.ForEach(func(k, v gjson.Result) bool {
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			writeJSString(b, k.Str)
			b.WriteByte(':')
			if nv := fa[i].Get(k.Str); (k.Str == "url" || k.Str == "mime") && nv.Type == gjson.String && nv.Str != v.Str {
				writeJSString(b, nv.Str)
			} else {
				b.WriteString(v.Raw)
			}
			return true
		})
		b.WriteByte('}')
	}
	b.WriteByte(']')
}

// sameJSON compares two JSON values by meaning (key order included).
func sameJSON(a, b gjson.Result) bool {
	var x, y bytes.Buffer
	stringifyJS(&x, a, 0, 0)
	stringifyJS(&y, b, 0, 0)
	return bytes.Equal(x.Bytes(), y.Bytes())
}

// compactJSON is used for raw values copied from pretty-printed input.
func compactJSON(raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}
