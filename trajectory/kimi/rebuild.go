package kimi

import (
	"bytes"
	"fmt"
	"io"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// Rebuild writes the wire log up to the boundary (WritePrefix's bytes) with
// each re-run call's tool.result `result` object replaced by the fresh raw
// result (output, note, isError, durationMs). Every other byte stays as it
// was: the turn's agent.message.appended records, which also carry the
// results, come only at the turn's end, after any boundary inside it.
func (f format) Rebuild(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int, fresh map[string]trajectory.Fresh) error {
	var prefix bytes.Buffer
	if err := f.WritePrefix(&prefix, src, size, t, afterStep); err != nil {
		return err
	}
	// The result lines of the calls to rewrite, by their start offset.
	repl := map[int64]trajectory.Fresh{}
	for _, a := range t.Actions {
		if a.Step < 1 || a.Step > afterStep {
			continue
		}
		for _, c := range a.Calls {
			fr, ok := fresh[c.ID]
			if !ok || fr.Reused || c.Observation == nil {
				continue
			}
			repl[c.Observation.Locator.StartByte] = fr
		}
	}
	data := prefix.Bytes()
	var off int64
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n') + 1
		if n == 0 {
			n = len(data)
		}
		line := data[:n]
		if fr, ok := repl[off]; ok {
			out, err := replaceResult(line, fr)
			if err != nil {
				return err
			}
			line = out
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		data, off = data[n:], off+int64(n)
	}
	return nil
}

// replaceResult swaps the event.result value of one tool.result line.
func replaceResult(line []byte, fr trajectory.Fresh) ([]byte, error) {
	r := gjson.GetBytes(line, "event.result")
	if !r.Exists() || r.Index <= 0 || len(fr.Native) == 0 {
		return nil, fmt.Errorf("kimi: rebuild: a tool.result line without a result object")
	}
	out := make([]byte, 0, len(line)+len(fr.Native))
	out = append(out, line[:r.Index]...)
	out = append(out, fr.Native...)
	return append(out, line[r.Index+len(r.Raw):]...), nil
}
