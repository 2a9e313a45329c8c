// Package opencode reads OpenCode sessions in the two shapes a user can hand
// us: the stdout of `opencode run --format json` (one event per line:
// step_start, text, reasoning, tool_use, step_finish, error) and the JSON
// document of `opencode export <id>` ({info, messages:[{info, parts}]}),
// which is also what `opencode import` loads when a rebuilt session is staged.
//
// One Action is one model step: a step_start … step_finish span (run events)
// or the step-start … step-finish parts of an assistant message (export).
// A tool part holds the call and its result together; its state goes
// pending → running → completed|error, and only completed/error carry a
// result.
//
// The format is also a trajectory.Replayer: NewToolSession re-executes the
// built-in tools with OpenCode 1.18's semantics and output texts (exec.go and
// the files per tool), and Rebuild writes the session as an export document
// with the fresh results (rebuild.go; synth.go for run-event input).
//
// Agent is OpenCode as the rest of pvisor sees it: its launcher, which
// stages the rebuilt export in an isolated home and continues it with
// `opencode run --session` (launch.go, collect.go), its resume and fork spec
// (resume.go), its envelope rules for the bridge (envelope.go), and its
// session database (database.go), into which pvisor writes and from which
// it reads sessions directly where the CLI's import and export would take
// seconds (store_stage.go, package store).
//
// Agent is OpenCode as the engine sees it: its launcher stages a rebuilt
// export into the CLI's SQLite database and continues it with `opencode
// run --session` (launch.go, store_stage.go), exports and cleans what the
// CLI wrote (collect.go), resumes and forks captured exports (resume.go,
// database.go), checks every request on the bridge (envelope.go), and
// keeps the doctor's recording (doctor.go).
package opencode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// Trajectory.Format values.
const (
	SubFormatRunEvents = "run-events" // `opencode run --format json` stdout
	SubFormatExport    = "export"     // `opencode export` JSON document
)

type format struct{}

// Format is the OpenCode format.
var Format trajectory.Format = format{}

// New returns the OpenCode format; it also implements trajectory.Replayer.
func New() trajectory.Format { return format{} }

var _ trajectory.Replayer = format{}

func (format) Agent() string { return AgentName }

// PrefixExt answers for run-event streams, the usual input; the interface
// has no trajectory to look at, so callers holding one should prefer
// PrefixExtFor, which knows that an export prefix is a JSON document.
func (format) PrefixExt() string { return "jsonl" }

// PrefixExtFor is the extension of the prefix WritePrefix writes for t;
// trajectory.PrefixExt finds it through this method.
func (format) PrefixExtFor(t *trajectory.Trajectory) string { return PrefixExtFor(t) }

// PrefixExtFor is the extension of the prefix WritePrefix writes for t.
func PrefixExtFor(t *trajectory.Trajectory) string {
	if t != nil && t.Format == SubFormatExport {
		return "json"
	}
	return "jsonl"
}

var runEventTypes = map[string]bool{
	"step_start": true, "text": true, "reasoning": true,
	"tool_use": true, "step_finish": true, "error": true,
}

// Detect claims run-event streams (a known event type next to a sessionID),
// export documents (first key "info" and a ses_ id), and captures of the
// server's /event bus, which Decode then refuses with an explanation.
func (format) Detect(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	if k := firstKey(head); k == "info" || k == "messages" {
		return bytes.Contains(head, []byte(`"ses_`)) && !bytes.Contains(head, []byte(`"trajectory_format"`))
	}
	line := head
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	// gjson finds keys in a cut line as long as they precede the cut;
	// OpenCode writes type, timestamp and sessionID before the part.
	typ := gjson.GetBytes(line, "type")
	if typ.Type == gjson.String && runEventTypes[typ.Str] {
		return gjson.GetBytes(line, "sessionID").Type == gjson.String
	}
	return isBusEvent(line)
}

// isBusEvent reports a server bus event ({type:"message.part.updated",
// properties}) bare or in the {timestamp, threadId, event} wrapper some
// clients log.
func isBusEvent(line []byte) bool {
	ev := gjson.GetBytes(line, "event")
	if !ev.IsObject() {
		ev = gjson.ParseBytes(line)
	}
	t := ev.Get("type").Str
	if !ev.Get("properties").Exists() {
		return false
	}
	for _, p := range []string{"session.", "message.", "permission.", "server.", "file.", "todo."} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// firstKey returns the first key of the JSON object that b starts with, ""
// when b does not start with `{"key"`.
func firstKey(b []byte) string {
	b = bytes.TrimLeft(b, " \t\r\n\ufeff")
	if len(b) == 0 || b[0] != '{' {
		return ""
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	if len(b) == 0 || b[0] != '"' {
		return ""
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return ""
	}
	return string(b[1 : 1+end])
}

// Decode reads either sub-format; the first key of the first object tells
// them apart, since an export may also be written on a single line.
func (format) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	return decode(r, opts, 0)
}

// DecodePrefix is Decode keeping only the steps up to afterStep of a
// run-event stream; an export is one JSON document and is decoded whole.
func (format) DecodePrefix(r io.Reader, _ io.ReaderAt, opts trajectory.Options, afterStep int) (*trajectory.Trajectory, error) {
	return decode(r, opts, afterStep)
}

func decode(r io.Reader, opts trajectory.Options, limit int) (*trajectory.Trajectory, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	head, err := br.Peek(64 << 10)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, &trajectory.Error{Kind: trajectory.Malformed, Msg: "empty file",
			Hint: "expected `opencode run --format json` output or an `opencode export` document"}
	}
	if k := firstKey(trimmed); k == "info" || k == "messages" {
		return decodeExport(br, opts)
	}
	return decodeEvents(br, opts, limit)
}

// WritePrefix copies the run-event lines through the boundary step, or
// re-encodes an export document cut after the boundary step's parts.
func (format) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	if t.Format == SubFormatExport {
		return writeExportPrefix(w, src, size, t, afterStep)
	}
	a, _ := t.Step(afterStep)
	end := a.Locator.EndByte
	if a.Locator.Unit != "line" || end <= 0 || end > size {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: a.Locator.Last,
			Msg:  fmt.Sprintf("step %d does not point at bytes of this file", afterStep),
			Hint: "decode the same file that is passed as the source"}
	}
	_, err := io.Copy(w, io.NewSectionReader(src, 0, end))
	return err
}

// PrefixModelTurns counts every step up to the boundary: each step is one
// model request, text-only ones included.
func (format) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}

// view aliases b as a string so gjson can scan a line without copying it;
// every string kept past the line is cloned.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// rawJSON copies a gjson value's raw text, compacted: an export is
// pretty-printed, and the same call must compare equal in both sub-formats.
func rawJSON(r gjson.Result) []byte {
	var buf bytes.Buffer
	buf.Grow(len(r.Raw))
	if err := json.Compact(&buf, []byte(r.Raw)); err != nil {
		return []byte(r.Raw)
	}
	return buf.Bytes()
}

// text returns a string value, or the raw JSON of any other value, so a
// tool that returned structured output still has model-visible content.
func text(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		return strings.Clone(r.Str)
	case gjson.Null:
		return ""
	}
	if !r.Exists() {
		return ""
	}
	return strings.Clone(r.Raw)
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	for i := max; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i] + "…"
		}
	}
	return s[:max]
}
