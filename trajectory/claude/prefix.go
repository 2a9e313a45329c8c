package claude

import (
	"fmt"
	"io"
	"strings"
	"unsafe"

	"github.com/pvisor/pvisor/trajectory"
)

// DecodePrefix is Decode keeping only the responses up to step afterStep.
// The active chain is known only once the last entry is read, so the pass
// over the file keeps the chain's structure (ids, parents, message ids,
// tool_use and tool_result ids) but no text, input or result content; the
// entries of the responses kept are then read again from src.
func (f *Format) DecodePrefix(r io.Reader, src io.ReaderAt, opts trajectory.Options, afterStep int) (*trajectory.Trajectory, error) {
	return newDecoder(opts).decode(r, src, afterStep)
}

// prefix cuts t, a lean decode, after step limit's response, and fills in
// what the kept responses lack. The first later response that starts before
// the step ends is kept too, so that WritePrefix still refuses to cut there.
func (d *decoder) prefix(t *trajectory.Trajectory, acts []act, src io.ReaderAt, limit int) (*trajectory.Trajectory, error) {
	keep := len(t.Actions)
	if i := t.ActionIndex(limit); i >= 0 {
		keep = i + 1
		end := t.Actions[i].Locator.EndByte
		for _, c := range t.Actions[i].Calls {
			end = max(end, c.Observation.Locator.EndByte)
		}
		for j := i + 1; j < len(t.Actions); j++ {
			if t.Actions[j].Locator.StartByte < end {
				keep = j + 1
				break
			}
		}
	}
	for ai := range keep {
		if err := d.refill(&t.Actions[ai], acts[ai].frags, src); err != nil {
			return nil, err
		}
	}
	if keep < len(t.Actions) {
		clear(t.Actions[keep:])
		t.Actions = t.Actions[:keep]
		t.Cut = limit
	}
	return t, nil
}

// refill reads a's entries again for its text, reasoning, call inputs and,
// unless the options skip them, its results' content.
func (d *decoder) refill(a *trajectory.Action, frags []int32, src io.ReaderAt) error {
	var texts, thoughts []string
	k := 0
	for _, ei := range frags {
		e := &d.entries[ei]
		line, err := readAt(src, e.start, e.end)
		if err != nil {
			return err
		}
		sub := newDecoder(d.opts)
		sub.buf = line
		f := sub.scan(unsafe.String(unsafe.SliceData(line), len(line)))
		var se entry
		if err := sub.assistant(&se, f.msg, f.apiErr); err != nil {
			return changed(int(e.line))
		}
		for _, b := range sub.blocks {
			switch b.kind {
			case blockText:
				texts = append(texts, b.text)
			case blockThinking:
				thoughts = append(thoughts, b.text)
			case blockToolUse:
				if k >= len(a.Calls) || a.Calls[k].ID != b.text {
					return changed(int(e.line))
				}
				a.Calls[k].Arguments = b.input
				k++
			}
		}
	}
	if k != len(a.Calls) {
		return changed(a.Locator.First)
	}
	a.Text, a.Reasoning = strings.Join(texts, "\n"), strings.Join(thoughts, "\n")
	if d.opts.SkipObservationContent {
		return nil
	}
	for i := range a.Calls {
		c := &a.Calls[i]
		if c.Observation == nil {
			continue
		}
		l := c.Observation.Locator
		line, err := readAt(src, l.StartByte, l.EndByte)
		if err != nil {
			return err
		}
		sub := newDecoder(d.opts)
		sub.buf = line
		var se entry
		if err := sub.user(&se, sub.scan(unsafe.String(unsafe.SliceData(line), len(line))).msg); err != nil {
			return changed(l.First)
		}
		found := false
		for _, r := range sub.results {
			if r.toolUseID == c.ID {
				c.Observation.Content, found = r.content, true
				break
			}
		}
		if !found {
			return changed(l.First)
		}
	}
	return nil
}

func readAt(src io.ReaderAt, start, end int64) ([]byte, error) {
	b := make([]byte, end-start)
	if _, err := src.ReadAt(b, start); err != nil {
		return nil, fmt.Errorf("claude: reading bytes %d-%d again: %w", start, end, err)
	}
	return b, nil
}

func changed(line int) error {
	return &trajectory.Error{Kind: trajectory.Malformed, Line: line, Msg: "the line changed while the file was read",
		Hint: "leave the file alone until pvisor ends (or replay a copy)"}
}
