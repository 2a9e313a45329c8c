package openhands

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
)

// Rebuild writes the prefix WritePrefix writes (the same events, the same
// bytes) with each observation event of steps 1..afterStep carrying its
// fresh result: the text (V0 `content`, V1 `observation.content`), the
// error flag and, for commands, the exit code wherever the event recorded
// one. Ids, timestamps, metadata and key order stay as they were. A reused
// result keeps its event byte for byte.
func (format) Rebuild(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int, fresh map[string]trajectory.Fresh) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	byEvent := map[int]trajectory.Fresh{}
	for _, a := range t.Steps() {
		if a.Step > afterStep {
			break
		}
		for _, c := range a.Calls {
			if f, ok := fresh[c.ID]; ok && !f.Reused && c.Observation != nil {
				byEvent[c.Observation.Locator.First] = f
			}
		}
	}
	edit := func(i int, raw []byte) []byte {
		f, ok := byEvent[i]
		if !ok {
			return raw
		}
		if t.Format == FormatV1Events {
			return rewriteV1(raw, f)
		}
		return rewriteV0(raw, f)
	}
	if t.Format == FormatV1Events {
		return writeV1(w, src, size, t, afterStep, edit)
	}
	return writeV0(w, src, size, t, afterStep, edit)
}

// replacement is one value of an event to overwrite.
type replacement struct {
	at, n int
	raw   []byte
}

func splice(raw []byte, reps []replacement) []byte {
	sort.Slice(reps, func(i, j int) bool { return reps[i].at > reps[j].at })
	out := bytes.Clone(raw)
	for _, r := range reps {
		out = append(out[:r.at], append(r.raw, out[r.at+r.n:]...)...)
	}
	return out
}

// set adds a replacement of the value at path, when the event has one.
func set(reps []replacement, ev []byte, path string, v any) []replacement {
	r := gjson.GetBytes(ev, path)
	if !r.Exists() || r.Index <= 0 {
		return reps
	}
	b, _ := json.Marshal(v)
	return append(reps, replacement{at: r.Index, n: len(r.Raw), raw: b})
}

func nativeOf(f trajectory.Fresh) (isErr bool, exit *int) {
	var n struct {
		IsError bool `json:"is_error"`
		Exit    *int `json:"exit_code"`
	}
	if json.Unmarshal(f.Native, &n) != nil {
		return f.IsError, f.ExitCode
	}
	return n.IsError, n.Exit
}

func rewriteV1(ev []byte, f trajectory.Fresh) []byte {
	isErr, exit := nativeOf(f)
	var reps []replacement
	switch gjson.GetBytes(ev, "kind").Str {
	case "AgentErrorEvent":
		reps = set(reps, ev, "error", f.Content)
	case "ObservationEvent":
		part := map[string]any{"type": "text", "text": f.Content}
		if gjson.GetBytes(ev, "observation.content.0.cache_prompt").Exists() {
			part["cache_prompt"] = false
		}
		b, _ := json.Marshal([]any{part})
		reps = set(reps, ev, "observation.content", json.RawMessage(b))
		reps = set(reps, ev, "observation.is_error", isErr)
		if exit != nil {
			reps = set(reps, ev, "observation.exit_code", *exit)
			reps = set(reps, ev, "observation.metadata.exit_code", *exit)
		}
	}
	return splice(ev, reps)
}

func rewriteV0(ev []byte, f trajectory.Fresh) []byte {
	_, exit := nativeOf(f)
	var reps []replacement
	reps = set(reps, ev, "content", f.Content)
	if exit != nil {
		reps = set(reps, ev, "extras.metadata.exit_code", *exit)
		reps = set(reps, ev, "success", *exit == 0)
	}
	return splice(ev, reps)
}
