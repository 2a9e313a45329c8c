// Package pi reads sessions of the Pi coding agent
// (@mariozechner/pi-coding-agent): session files (~/.pi/agent/sessions/
// --<cwd>--/<ts>_<id>.jsonl) in format v1 (linear entries, header without a
// version) and v2/v3 (entries linked by id/parentId, of which the active
// branch is the chain ending at the last entry), and the event stream of
// `pi --mode json` (message_end, tool_execution_*, turn_end, …).
//
// One Action is one assistant message; its toolCall blocks form the batch,
// each paired with its toolResult by toolCallId.
//
// Agent is Pi as the engine sees it: its launcher stages a rebuilt session
// and continues it with `pi --mode json --session` (launch.go), cleans the
// session the CLI wrote (collect.go), resumes and forks captured sessions
// (resume.go), checks every request on the bridge (envelope.go), and keeps
// the session store (store.go), the per-release tool semantics
// (semantics.go) and the doctor's recordings (doctor.go).
package pi

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// Trajectory.Format values: the session file format version, or the event
// stream.
const (
	SubFormatSessionV1 = "session-v1"
	SubFormatSessionV2 = "session-v2"
	SubFormatSessionV3 = "session-v3"
	SubFormatEvents    = "events"
)

// maxVersion is the newest session file format this package knows.
const maxVersion = 3

type format struct{}

// Format is the Pi format.
var Format trajectory.Format = format{}

// New returns the Pi format.
func New() trajectory.Format { return format{} }

func (format) Agent() string     { return AgentName }
func (format) PrefixExt() string { return "jsonl" }

// eventTypes are the AgentSessionEvents of --mode json and the response
// records of --mode rpc.
var eventTypes = map[string]bool{
	"agent_start": true, "agent_end": true, "turn_start": true, "turn_end": true,
	"message_start": true, "message_update": true, "message_end": true,
	"tool_execution_start": true, "tool_execution_update": true, "tool_execution_end": true,
	"auto_compaction_start": true, "auto_compaction_end": true,
	"auto_retry_start": true, "auto_retry_end": true, "response": true,
}

// Detect looks at the first line only (possibly cut): a session header, an
// event, or a bare session entry (refused later with an explanation).
// Claude lines carry uuid/parentUuid and Codex lines a payload, OpenCode
// events a sessionID; none of them uses these types.
func (format) Detect(head []byte) bool {
	line := firstLine(head)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	for _, k := range []string{"parentUuid", "payload", "sessionID"} {
		if gjson.GetBytes(line, k).Exists() {
			return false
		}
	}
	switch typ := gjson.GetBytes(line, "type").Str; {
	case typ == "session":
		return gjson.GetBytes(line, "id").Type == gjson.String &&
			(gjson.GetBytes(line, "cwd").Exists() || gjson.GetBytes(line, "version").Exists())
	case typ == "response":
		return gjson.GetBytes(line, "command").Exists() && gjson.GetBytes(line, "success").Exists()
	case eventTypes[typ]:
		return true
	case typ == "message":
		role := gjson.GetBytes(line, "message.role").Str
		return role == "user" || role == "assistant" || role == "toolResult"
	}
	return false
}

func firstLine(head []byte) []byte {
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		var line []byte
		if i < 0 {
			line, head = head, nil
		} else {
			line, head = head[:i], head[i+1:]
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line
		}
	}
	return nil
}

// header is what the first line of a session file (and of a --mode json
// stream since 0.45) says.
type header struct {
	present bool
	version int // 1 when absent
	id      string
	cwd     string
}

// Decode reads the first line to learn what the file is, then hands the
// stream to the session or the event decoder.
func (format) Decode(r io.Reader, opts trajectory.Options) (*trajectory.Trajectory, error) {
	return decode(r, nil, opts, 0)
}

// DecodePrefix is Decode keeping only the responses up to step afterStep;
// the prefix of a tree session is read again from src once its branch is
// known.
func (format) DecodePrefix(r io.Reader, src io.ReaderAt, opts trajectory.Options, afterStep int) (*trajectory.Trajectory, error) {
	return decode(r, src, opts, afterStep)
}

func decode(r io.Reader, src io.ReaderAt, opts trajectory.Options, limit int) (*trajectory.Trajectory, error) {
	jr := jsonl.NewReader(r)
	if !jr.Next() {
		if err := jr.Err(); err != nil {
			return nil, err
		}
		return nil, &trajectory.Error{Kind: trajectory.Malformed, Msg: "empty file",
			Hint: "expected a pi session file or `pi --mode json` output"}
	}
	ln := jr.Line()
	rec := gjson.Parse(view(ln.Data))
	typ := rec.Get("type")
	var h header
	switch {
	case typ.Str == "session":
		var err error
		if h, err = readHeader(rec, ln.N); err != nil {
			return nil, err
		}
		// pi loads a session line by line and drops a line JSON.parse
		// refuses; two records joined on one line are such a line.
		jr.SkipJoined()
		if !jr.Next() {
			if err := jr.Err(); err != nil {
				return nil, err
			}
			// A header alone: pi wrote the file and exited before any prompt.
			t := newTrajectory(h, sessionFormat(h.version))
			t.TornTail, t.Lines = jr.Torn(), jr.Lines()
			return t, nil
		}
		ln = jr.Line()
		typ = gjson.Get(view(ln.Data), "type")
	case typ.Type == gjson.String && eventTypes[typ.Str]:
	case typ.Str == "message" || typ.Str == "model_change" || typ.Str == "thinking_level_change" || typ.Str == "compaction":
		return nil, &trajectory.Error{Kind: trajectory.Malformed, Line: ln.N,
			Msg:  "pi session file has no header (the first line is a " + clip(typ.Str) + " entry)",
			Hint: `a session file starts with {"type":"session",…}; this looks like an excerpt of one`}
	default:
		return nil, trajectory.Errorf(ln.N, "not a pi session file or event stream: first record has type %q", clip(typ.String()))
	}
	if eventTypes[typ.Str] {
		return decodeEvents(jr, h, opts, limit)
	}
	return decodeSession(jr, h, opts, src, limit)
}

func readHeader(rec gjson.Result, line int) (header, error) {
	h := header{present: true, version: 1}
	id := rec.Get("id")
	if id.Type != gjson.String || id.Str == "" {
		return h, trajectory.Errorf(line, "session header has no id")
	}
	h.id = strings.Clone(id.Str)
	if cwd := rec.Get("cwd"); cwd.Type == gjson.String {
		h.cwd = strings.Clone(cwd.Str)
	}
	if v := rec.Get("version"); v.Exists() {
		if v.Type != gjson.Number || v.Num != float64(int(v.Num)) || v.Num < 1 {
			return h, trajectory.Errorf(line, "session header version %s is not a positive integer", clip(v.Raw))
		}
		h.version = int(v.Num)
		if h.version > maxVersion {
			return h, &trajectory.Error{Kind: trajectory.Unsupported, Line: line,
				Msg:  fmt.Sprintf("pi session format version %d is newer than pvisor knows (1-%d)", h.version, maxVersion),
				Hint: "upgrade pvisor"}
		}
	}
	return h, nil
}

func sessionFormat(v int) string {
	switch v {
	case 1:
		return SubFormatSessionV1
	case 2:
		return SubFormatSessionV2
	}
	return SubFormatSessionV3
}

func newTrajectory(h header, sub string) *trajectory.Trajectory {
	// No pi file records the CLI version (checked: v1 and v3 headers, entries
	// and --mode json events), so Version stays empty; the file format
	// version is in Format.
	return &trajectory.Trajectory{Agent: AgentName, SessionID: h.id, Cwd: h.cwd, Format: sub}
}

// WritePrefix copies the original bytes through the boundary's last record:
// its last toolResult entry (session) or, in an event stream, the turn_end
// that closes it when there is one. For a tree session the prefix's last
// entry is that result, so pi takes it as the leaf and the active branch
// ends at the boundary.
func (format) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
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
	_, err := io.Copy(w, io.NewSectionReader(src, 0, end))
	return err
}

// PrefixModelTurns counts the assistant messages up to the boundary, each
// one model request; aborted and text-only responses included.
func (format) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}

func lineLoc(ln jsonl.Line) trajectory.Locator {
	return trajectory.Locator{Unit: "line", First: ln.N, Last: ln.N, StartByte: ln.Offset, EndByte: ln.End}
}

// view aliases b as a string so gjson can scan a line without copying it;
// every string kept past the line is cloned.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func clip(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}
