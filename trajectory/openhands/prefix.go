package openhands

import (
	"bufio"
	"fmt"
	"io"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsondoc"
)

// WritePrefix writes a replay trajectory for OpenHands' ReplayManager: a JSON
// array of the source events up to and including the last observation of
// step afterStep, whatever the source was (array or output.jsonl line).
//
// Events are copied byte for byte, with the source's own separators (so a
// Python indent=2 export stays indent=2), except two kinds the controller
// creates by itself when a session starts and when a user message arrives:
// the `system` action (load_replay_log also requires the first non-
// environment event to be the user's message) and `recall` actions with
// their observations. Replaying those would duplicate them.
func (format) WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int) error {
	if err := trajectory.CheckBoundary(t, afterStep); err != nil {
		return err
	}
	keep := func(_ int, raw []byte) []byte { return raw }
	if t.Format == FormatV1Events {
		return writeV1(w, src, size, t, afterStep, keep)
	}
	return writeV0(w, src, size, t, afterStep, keep)
}

// writeV0 writes the V0 prefix, each kept event passed through edit with
// its index.
func writeV0(w io.Writer, src io.ReaderAt, size int64, t *trajectory.Trajectory, afterStep int, edit func(int, []byte) []byte) error {
	if t.Format == FormatLegacyEvents || t.Format == FormatLegacyEvalOutput {
		return &trajectory.Error{Kind: trajectory.Unsupported,
			Msg:  "2024-era flat OpenHands events (no args/extras) cannot be loaded by the current ReplayManager",
			Hint: "re-run the task with an OpenHands version that writes V0 events with args/extras"}
	}
	if t.Offset > 0 {
		// One instance of a multi-instance output.jsonl: its line.
		src, size = io.NewSectionReader(src, t.Offset, size-t.Offset), size-t.Offset
	}
	d, err := jsondoc.OpenRecords(io.NewSectionReader(src, 0, size), records)
	if err != nil {
		return err
	}
	open := d.Offset() // just past '['

	bw := bufio.NewWriterSize(w, 64<<10)
	var (
		prevEnd = open
		kept    int
		multi   bool // the source puts elements on their own lines
		dropped = map[int64]bool{}
		first   = true
	)
	a, _ := t.Step(afterStep)
	later := laterEvents(t, afterStep, a.Locator.Last)
	for i := 0; i <= a.Locator.Last; i++ {
		if !d.More() {
			return trajectory.Errorf(0, "the file changed since it was decoded: event %d is missing", i)
		}
		raw, line, err := d.Raw("event")
		if err != nil {
			return err
		}
		start, _ := d.Span()
		sep := make([]byte, start-prevEnd)
		if _, err := src.ReadAt(sep, prevEnd); err != nil {
			return err
		}
		prevEnd = start + int64(len(raw))
		if later[i] {
			continue
		}
		ev := gjson.ParseBytes(raw)
		act, obs := ev.Get("action").String(), ev.Get("observation").String()
		if act == "system" || act == "recall" {
			dropped[ev.Get("id").Int()] = true
			continue
		}
		if obs != "" && ev.Get("cause").Exists() && dropped[ev.Get("cause").Int()] {
			continue
		}
		if first && ev.Get("source").String() != "environment" && obs == "" {
			first = false
			if act != "message" || ev.Get("source").String() != "user" {
				return trajectory.Errorf(line, "event %d: an OpenHands replay must start with the user's task message, not %q from %q",
					i, act, ev.Get("source").String())
			}
		}
		if kept == 0 {
			// Whitespace between '[' and the first element.
			ws := make([]byte, 0, len(sep))
			for _, c := range sep {
				if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
					ws = append(ws, c)
				}
			}
			multi = len(ws) > 0
			bw.WriteByte('[')
			bw.Write(ws)
		} else {
			bw.Write(sep)
		}
		bw.Write(edit(i, raw))
		kept++
	}
	if first {
		return trajectory.Errorf(0, "the prefix has no user message for OpenHands to start from")
	}
	if multi {
		bw.WriteByte('\n')
	}
	bw.WriteString("]\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the OpenHands prefix: %w", err)
	}
	return nil
}

// laterEvents returns the indexes, up to last, of the events that belong to
// responses after step afterStep. Events interleave when a response's action
// is written before the previous one's last observation; the prefix must
// hold exactly steps 1..afterStep, or ReplayManager would replay the next
// action as part of the past.
func laterEvents(t *trajectory.Trajectory, afterStep, last int) map[int]bool {
	later := map[int]bool{}
	for i := t.ActionIndex(afterStep) + 1; i < len(t.Actions); i++ {
		a := &t.Actions[i]
		if a.Locator.First > last {
			continue
		}
		if len(a.Calls) == 0 {
			later[a.Locator.First] = true
		}
		for _, c := range a.Calls {
			later[c.Locator.First] = true
			if c.Observation != nil {
				later[c.Observation.Locator.First] = true
			}
		}
	}
	return later
}

// PrefixExtFor: V1 events are JSONL; V0 prefixes are a JSON array.
func (format) PrefixExtFor(t *trajectory.Trajectory) string {
	if t.Format == FormatV1Events {
		return "jsonl"
	}
	return "json"
}

// records is where WritePrefix finds the events: the top-level array, or
// the history of an output.jsonl line.
var records = jsondoc.Records{
	Key:      "history",
	Object:   "top-level object",
	Expected: "a JSON array of events",
	Missing:  `no "history" in the instance`,
}
