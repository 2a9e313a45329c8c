package kimi

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// WritePrefix writes the wire log up to the end of step afterStep (its
// step.end, or its last tool.result when it has none). The log is
// append-only, so that byte prefix is the log as it stood when the step
// was over. (Kimi appends the turn's
// agent.message.appended records and turn.ended only when a turn ends;
// a prefix cut inside a turn has none of them, as a crash would leave it.)
func (format) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	a, ok := t.Step(afterStep)
	if !ok {
		return &trajectory.Error{Kind: trajectory.Malformed, Msg: fmt.Sprintf("after-step %d: no such step", afterStep)}
	}
	end := a.Locator.EndByte
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
// boundary step's: each step is one model request, text-only ones too.
func (format) PrefixModelTurns(t *trajectory.Trajectory, afterStep int) int {
	return t.ActionIndex(afterStep) + 1
}

// ReplayTools are the tools --replay-only re-runs (tools.go).
func (format) ReplayTools() []string { return append([]string(nil), replayTools...) }

// unsupportedArgs are the arguments whose paging or output shapes the
// replay does not reproduce (yet): a call using one is refused.
var unsupportedArgs = map[string][]string{
	"Bash": {"run_in_background", "disable_timeout"},
	"Glob": {"head_limit", "offset", "include_ignored", "include_dirs"},
	"Grep": {"-A", "-B", "-C", "head_limit", "offset", "multiline", "include_ignored"},
	"Read": {"line_offset", "column_offset", "n_lines", "max_chars"},
}

// CheckReplayable accepts the tools tools.go re-runs, without the
// arguments it does not reproduce.
func (format) CheckReplayable(call *trajectory.ToolCall) error {
	if !slices.Contains(replayTools, call.Name) {
		return fmt.Errorf("%s is not a tool pvisor can re-run for Kimi Code", call.Name)
	}
	args := gjson.ParseBytes(call.Arguments)
	for _, k := range unsupportedArgs[call.Name] {
		if v := args.Get(gjson.Escape(k)); v.Exists() && v.Type != gjson.Null && v.Type != gjson.False {
			return fmt.Errorf("%s with %s is not reproduced by pvisor's replay of Kimi Code", call.Name, k)
		}
	}
	if call.Name == "Grep" && args.Get("output_mode").Str != "content" {
		return errors.New("Grep is re-run in output_mode content only (files_with_matches and count_matches sort by mtime)")
	}
	return nil
}
