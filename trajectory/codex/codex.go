// Package codex reads Codex CLI rollout files
// (~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<thread id>.jsonl): one
// {"timestamp","type","payload"} record per line, from the 0.40 `shell` argv
// era to the 0.17x unified-exec (`exec_command`/`write_stdin`) and freeform
// `apply_patch` era.
//
// Agent is Codex as the engine sees it: its launcher stages a rebuilt
// rollout and continues it with `codex exec resume` (launch.go), cleans the
// rollout the CLI wrote (collect.go), resumes and forks captured sessions
// (resume.go), and checks every request of the continuation on the bridge
// (envelope.go).
package codex

import (
	"bytes"
	"fmt"
	"io"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// SubFormat is the Trajectory.Format of every decoded rollout.
const SubFormat = "rollout-jsonl"

type format struct{}

// Format is the Codex rollout format.
var Format trajectory.Format = format{}

// New returns the Codex rollout format.
func New() trajectory.Format { return format{} }

func (format) Agent() string     { return AgentName }
func (format) PrefixExt() string { return "jsonl" }

// Detect looks only at the first non-blank line, which may be cut short
// (0.12x session_meta lines carry the whole base prompt and can exceed the
// head). gjson finds keys in a truncated object as long as they come before
// the cut, and Codex writes "timestamp" and "type" first.
func (format) Detect(head []byte) bool {
	line := firstLine(head)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	if execStreamType(line) {
		// Claimed so that the user gets Decode's explanation instead of
		// "not a session file of any known agent".
		return true
	}
	ts := gjson.GetBytes(line, "timestamp")
	if ts.Type != gjson.String {
		return false
	}
	switch gjson.GetBytes(line, "type").Str {
	case "session_meta", "response_item", "event_msg", "turn_context":
		return bytes.Contains(line, []byte(`"payload"`))
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

// execStreamType reports whether line is an event of `codex exec --json`
// stdout ({"type":"thread.started","thread_id":…} and friends), which has no
// timestamp or payload envelope.
func execStreamType(line []byte) bool {
	if gjson.GetBytes(line, "payload").Exists() {
		return false
	}
	switch gjson.GetBytes(line, "type").Str {
	case "thread.started", "turn.started", "turn.completed", "turn.failed",
		"item.started", "item.updated", "item.completed":
		return true
	}
	return false
}

// WritePrefix copies the original bytes up to the end of the last output
// record of step afterStep. Rollouts are append-only and Codex resumes from
// a truncated one without complaint (it writes no turn_aborted for the cut
// turn), so a byte prefix is exactly the native session at that point.
// Event lines that Codex wrote after the last output (exec_command_end,
// token_count) are left out: they are UI telemetry the model never sees.
func (format) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	a, ok := t.Step(afterStep)
	if !ok {
		return &trajectory.Error{Kind: trajectory.Malformed, Msg: fmt.Sprintf("after-step %d: no such step", afterStep)}
	}
	var end int64
	for i := range a.Calls {
		if o := a.Calls[i].Observation; o != nil && o.Locator.EndByte > end {
			end = o.Locator.EndByte
		}
	}
	if end <= 0 || end > size {
		return &trajectory.Error{Kind: trajectory.Malformed, Line: a.Locator.Last,
			Msg:  fmt.Sprintf("step %d ends at byte %d but the file has %d bytes", afterStep, end, size),
			Hint: "the file changed after it was decoded; decode it again"}
	}
	_, err := io.Copy(w, io.NewSectionReader(src, 0, end))
	return err
}

// PrefixModelTurns counts every model response up to and including the
// boundary step's, text-only and reasoning-only responses included: each
// was one model request.
func (format) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}
