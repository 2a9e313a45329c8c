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

// prefix builds the responses up to step limit's and fills in what the lean
// pass left out. The first later response that starts before the step ends
// is kept too, so that WritePrefix still refuses to cut there.
func (d *decoder) prefix(t *trajectory.Trajectory, acts []act, src io.ReaderAt, limit int) (*trajectory.Trajectory, error) {
	keep, err := d.pairLean(acts, limit)
	if err != nil {
		return nil, err
	}
	if err := d.materialize(t, acts, keep); err != nil {
		return nil, err
	}
	t.NumberSteps()
	rr := &rereader{src: src, sub: newDecoder(d.opts)}
	for ai := range t.Actions {
		if err := d.refill(&t.Actions[ai], acts[ai].frags, rr); err != nil {
			return nil, err
		}
	}
	if keep < len(acts) {
		t.Cut = limit
	}
	return t, nil
}

// pairLean pairs every result with its call, with the checks of
// materialize but without building actions, and returns how many acts the
// prefix keeps: all of them when step limit is not reached. The lean pass
// kept no ids, only their hashes, so a check that fails asks for the full
// decode, whose error names them.
func (d *decoder) pairLean(acts []act, limit int) (int, error) {
	type leanCall struct{ act, line, result int32 }
	var lc []leanCall
	calls := make(map[uint64]int32)
	type span struct {
		first, last int32 // lines, as Locator.Extend compares them
		start, end  int64
		calls, done int32
	}
	spans := make([]span, len(acts))
	extend := func(s *span, e *entry) {
		if s.first == 0 || e.line < s.first {
			s.first, s.start = e.line, e.start
		}
		s.last, s.end = max(s.last, e.line), max(s.end, e.end)
	}
	for ai := range acts {
		for _, ei := range acts[ai].frags {
			e := d.entries.at(ei)
			extend(&spans[ai], e)
			for _, b := range d.blocks[e.data : e.data+e.ndata] {
				if b.kind != blockToolUse {
					continue
				}
				if _, dup := calls[b.id]; dup {
					return 0, trajectory.ErrNeedFull
				}
				calls[b.id] = int32(len(lc))
				lc = append(lc, leanCall{act: int32(ai), line: e.line})
				spans[ai].calls++
			}
		}
	}
	for ai := range acts {
		for _, ei := range acts[ai].results {
			e := d.entries.at(ei)
			for i, r := range d.results[e.data : e.data+e.ndata] {
				ci, ok := calls[r.id]
				if !ok {
					return 0, d.unmatched(e, i)
				}
				c := &lc[ci]
				if c.result != 0 {
					return 0, trajectory.ErrNeedFull
				}
				c.result = e.line
				spans[c.act].done++
				extend(&spans[c.act], e)
			}
		}
	}
	steps := 0
	for i := range spans {
		if s := &spans[i]; s.calls == 0 || s.done < s.calls {
			continue
		}
		if steps++; steps < limit {
			continue
		}
		for j := i + 1; j < len(spans); j++ {
			if spans[j].start < spans[i].end {
				return j + 1, nil
			}
		}
		return i + 1, nil
	}
	return len(acts), nil
}

// refill reads a's entries again for its text, reasoning, call inputs and,
// unless the options skip them, its results' content.
func (d *decoder) refill(a *trajectory.Action, frags []int32, rr *rereader) error {
	var texts, thoughts []string
	// The hashes of the calls' ids, in the order materialize made the calls.
	var ids []uint64
	for _, ei := range frags {
		e := d.entries.at(ei)
		for _, b := range d.blocks[e.data : e.data+e.ndata] {
			if b.kind == blockToolUse {
				ids = append(ids, b.id)
			}
		}
	}
	k := 0
	for _, ei := range frags {
		e := d.entries.at(ei)
		sub, line, err := rr.read(e.start, e.end)
		if err != nil {
			return err
		}
		f := sub.scan(unsafe.String(unsafe.SliceData(line), len(line)))
		var se entry
		if err := sub.assistant(&se, f.msg, f.apiErr); err != nil {
			return changed(int(e.line))
		}
		for i, b := range sub.blocks {
			body := &sub.bodies[i]
			switch b.kind {
			case blockText:
				texts = append(texts, body.text)
			case blockThinking:
				thoughts = append(thoughts, body.text)
			case blockToolUse:
				if k >= len(a.Calls) || k >= len(ids) || d.hash(body.text) != ids[k] {
					return changed(int(e.line))
				}
				a.Calls[k].ID, a.Calls[k].Arguments = body.text, body.input
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
		sub, line, err := rr.read(l.StartByte, l.EndByte)
		if err != nil {
			return err
		}
		var se entry
		if err := sub.user(&se, sub.scan(unsafe.String(unsafe.SliceData(line), len(line))).msg); err != nil {
			return changed(l.First)
		}
		found := false
		for _, r := range sub.rbodies {
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

// rereader reads lines of the file again into one buffer, for one
// decoder that is emptied before each: at a late step of a large session
// refill reads thousands of lines, and a buffer and a decoder apiece were
// most of what the prefix allocated. What the decoder keeps of a line is
// copied out of it (decoder.keep), so the buffer can be reused.
type rereader struct {
	src io.ReaderAt
	sub *decoder
	buf []byte
}

// read returns the emptied decoder, set up for the line at start-end,
// and the line.
func (rr *rereader) read(start, end int64) (*decoder, []byte, error) {
	n := int(end - start)
	if cap(rr.buf) < n {
		rr.buf = make([]byte, n)
	}
	line := rr.buf[:n]
	if _, err := rr.src.ReadAt(line, start); err != nil {
		return nil, nil, fmt.Errorf("claude: reading bytes %d-%d again: %w", start, end, err)
	}
	sub := rr.sub
	clear(sub.bodies)
	clear(sub.rbodies)
	sub.blocks, sub.bodies = sub.blocks[:0], sub.bodies[:0]
	sub.results, sub.rbodies = sub.results[:0], sub.rbodies[:0]
	sub.buf = line
	return sub, line, nil
}

func changed(line int) error {
	return &trajectory.Error{Kind: trajectory.Malformed, Line: line, Msg: "the line changed while the file was read",
		Hint: "leave the file alone until pvisor ends (or replay a copy)"}
}
