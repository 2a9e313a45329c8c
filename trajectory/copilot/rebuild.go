package copilot

import (
	"bytes"
	"fmt"
	"io"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/jsstr"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// Rebuild writes the prefix through afterStep with the result of every
// re-executed call replaced in its tool.execution_complete: result.content
// and success take the fresh values, and the UI-only fields derived from the
// old run (result.detailedContent, a diff, and shellExecution.exitCode) are
// updated or dropped. A record whose call came out the same is kept byte for
// byte; Copilot reads the rest of the line as it was.
func (f format) Rebuild(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int, fresh map[string]trajectory.Fresh) error {
	var prefix bytes.Buffer
	if err := f.WritePrefix(&prefix, src, size, t, afterStep); err != nil {
		return err
	}
	jr := jsonl.NewReader(bytes.NewReader(prefix.Bytes()))
	for jr.Next() {
		l := jr.Line()
		line := l.Data
		if gjson.GetBytes(line, "type").Str == "tool.execution_complete" {
			id := gjson.GetBytes(line, "data.toolCallId").Str
			if fr, ok := fresh[id]; ok && !fr.Reused {
				var err error
				if line, err = replaceResult(line, fr); err != nil {
					return trajectory.Errorf(l.N, "rebuilding the result of %s: %v", id, err)
				}
			}
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		if _, err := w.Write([]byte("\n")); err != nil {
			return err
		}
	}
	return jr.Err()
}

// replaceResult edits one tool.execution_complete line in place.
func replaceResult(line []byte, fr trajectory.Fresh) ([]byte, error) {
	data := gjson.GetBytes(line, "data")
	if ResultText(data) == fr.Content && data.Get("success").Bool() == !fr.IsError {
		return line, nil
	}
	success := "true"
	if fr.IsError {
		success = "false"
	}
	// The new result as Copilot writes it: "result":{"content"} for a
	// success, "error":{"message","code":"failure"} for a failure.
	key, res := `"result":`, jsstr.AppendQuote([]byte(`{"content":`), fr.Content)
	if fr.IsError {
		key, res = `"error":`, append(jsstr.AppendQuote([]byte(`{"message":`), fr.Content), `,"code":"failure"`...)
	}
	res = append(res, '}')
	out := append([]byte(nil), line[:data.Index]...)
	out = append(out, '{')
	first := true
	var err error
	data.ForEach(func(k, v gjson.Result) bool {
		var val []byte
		switch k.Str {
		case "result", "error":
			return true // written below
		case "success":
			val = []byte(success)
		case "shellExecution":
			if fr.ExitCode == nil {
				return true
			}
			val = fmt.Appendf(nil, `{"exitCode":%d}`, *fr.ExitCode)
		default:
			val = []byte(v.Raw)
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, k.Raw...)
		out = append(out, ':')
		out = append(out, val...)
		return true
	})
	if !first {
		out = append(out, ',')
	}
	out = append(out, key...)
	out = append(out, res...)
	out = append(out, '}')
	out = append(out, line[data.Index+len(data.Raw):]...)
	if !gjson.ValidBytes(out) {
		err = fmt.Errorf("the edited record is not valid JSON")
	}
	return out, err
}
