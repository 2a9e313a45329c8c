package pi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/rawjson"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// entry is one session line after the header. Only message entries keep a
// decoded message; the rest only take part in the tree.
type entry struct {
	id, parent string
	loc        trajectory.Locator
	msg        *message
}

// decodeSession reads session entries; jr stands on the first entry.
//
// v1 entries have no ids and form one linear conversation. v2/v3 entries
// form a tree; pi resumes at the last entry and sends the chain from it to
// the root, so only that chain is decoded. Which entries are on the chain is
// known only at the end, so entries are kept until then (messages without
// their raw lines). Compaction and branch_summary entries stay on the chain
// as they are: they change what the model is sent, not which tool calls ran
// in the workspace, and a prefix keeps them verbatim.
func decodeSession(jr *jsonl.Reader, h header, opts trajectory.Options, src io.ReaderAt, limit int) (*trajectory.Trajectory, error) {
	t := newTrajectory(h, sessionFormat(h.version))
	tree := h.version >= 2
	// With a limit (DecodePrefix), a tree's messages are parsed lean: only
	// the chain decides which are in the prefix, and those are read again
	// from src at the end. A linear session is linked as it is read, and
	// the responses after the boundary are dropped as they end.
	lean := tree && limit > 0
	k := newLinker(t, false)
	cut := trajectory.Cutter{Limit: limit}
	var linkErr error // the first, reported once every line is read, as a tree's would be
	var entries []entry
	index := map[string]int{}
	var dates evidence
	sawSystem, sawAssistant := false, false
	for ok := true; ok; ok = jr.Next() {
		ln := jr.Line()
		var typ, id, parent, msg gjson.Result
		rawjson.EachOf(gjson.Parse(view(ln.Data)), entryKeys, func(k, v gjson.Result) bool {
			switch k.Str {
			case "type":
				typ = v
			case "id":
				id = v
			case "parentId":
				parent = v
			case "message":
				msg = v
			}
			return true
		})
		if typ.Type != gjson.String || typ.Str == "" {
			return nil, trajectory.Errorf(ln.N, "entry has no type")
		}
		if typ.Str == "session" {
			return nil, &trajectory.Error{Kind: trajectory.Malformed, Line: ln.N,
				Msg:  "a second session header: the file holds several sessions",
				Hint: "pi writes one session per file; split the file at this line"}
		}
		if eventTypes[typ.Str] {
			return nil, trajectory.Errorf(ln.N, "%s event in a session file (a session file and a --mode json stream mixed?)", typ.Str)
		}
		e := entry{loc: lineLoc(ln)}
		if tree {
			if id.Type != gjson.String || id.Str == "" {
				return nil, &trajectory.Error{Kind: trajectory.Malformed, Line: ln.N,
					Msg:  fmt.Sprintf("%s entry has no id", clip(typ.Str)),
					Hint: fmt.Sprintf("version %d sessions link every entry by id/parentId", h.version)}
			}
			if _, dup := index[id.Str]; dup {
				return nil, trajectory.Errorf(ln.N, "entry id %s is used twice", clip(id.Str))
			}
			switch p := parent; p.Type {
			case gjson.Null:
			case gjson.String:
				if _, ok := index[p.Str]; ok {
					e.parent = strings.Clone(p.Str)
				} else if !onJoinedLine(jr.Joined(), p.Str) {
					return nil, trajectory.Errorf(ln.N, "parentId %s names no earlier entry", clip(p.Str))
				}
				// A parent on a skipped joined line is missing for pi
				// too: its walk from the leaf stops here, so this entry
				// is where the conversation it resumes begins.
			default:
				if p.Exists() {
					return nil, trajectory.Errorf(ln.N, "parentId is neither a string nor null")
				}
			}
			e.id = strings.Clone(id.Str)
			index[e.id] = len(entries)
		}
		if typ.Str == "message" {
			if !sawSystem && msg.Get("role").Str == "system" {
				sawSystem = true
				dates.atLeast(relSystemMessages) // only this generation writes them
			}
			m, ok, problem := parseMessage(msg, e.loc, opts.SkipObservationContent || cut.Done(), lean || cut.Done())
			if problem != "" {
				return nil, trajectory.Errorf(ln.N, "%s", problem)
			}
			if ok {
				e.msg = &m
				dates.merge(m.dates)
				sawAssistant = sawAssistant || m.role == "assistant"
			}
		}
		switch {
		case tree:
			entries = append(entries, e)
		case e.msg != nil && linkErr == nil:
			linkErr = link(k, &cut, e.msg, e.loc)
		}
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	if linkErr != nil {
		return nil, linkErr
	}
	var onBranch []bool
	if tree && len(entries) > 0 {
		onBranch = make([]bool, len(entries))
		for i := len(entries) - 1; ; {
			onBranch[i] = true
			p := entries[i].parent
			if p == "" {
				break
			}
			i = index[p]
		}
	}
	for i := range entries {
		e := &entries[i]
		if e.msg == nil || onBranch != nil && !onBranch[i] {
			continue
		}
		if err := link(k, &cut, e.msg, e.loc); err != nil {
			return nil, err
		}
	}
	k.finish()
	cut.Settle(t, nil)
	if sawAssistant && !sawSystem {
		dates.below(relSystemMessages) // every request since 0.86 stores one first
	}
	if dates.consistent() {
		t.MinVersion, t.BeforeVersion = dates.bounds()
	}
	if lean {
		if err := refill(t, src, opts); err != nil {
			return nil, err
		}
	}
	t.TornTail, t.Lines = jr.Torn(), jr.Lines()
	for _, j := range jr.Joined() {
		t.Joined = append(t.Joined, trajectory.JoinedLine{Line: j.Line, Records: len(j.Records)})
	}
	t.NumberSteps()
	return t, nil
}

// link feeds one message of the conversation, in order, to the linker.
func link(k *linker, cut *trajectory.Cutter, m *message, loc trajectory.Locator) error {
	if m.role == "assistant" {
		// The responses so far are final: no result can reach them now.
		k.finish()
		k.cur = -1 // settled, and maybe dropped
		cut.Settle(k.t, nil)
		k.assistant(m, loc)
		return nil
	}
	if problem := k.result(m, loc); problem != "" {
		return trajectory.Errorf(loc.First, "%s", problem)
	}
	return nil
}

// refill reads the assistant line of every kept action again, from src, for
// the text, reasoning and arguments a lean parse left out. An action's
// locator starts at its assistant message; results only extend its end.
func refill(t *trajectory.Trajectory, src io.ReaderAt, opts trajectory.Options) error {
	for i := range t.Actions {
		a := &t.Actions[i]
		line, err := readLine(src, a.Locator.StartByte)
		if err != nil {
			return fmt.Errorf("pi: line %d: reading it again: %w", a.Locator.First, err)
		}
		loc := trajectory.Locator{Unit: "line", First: a.Locator.First, Last: a.Locator.First,
			StartByte: a.Locator.StartByte, EndByte: a.Locator.StartByte + int64(len(line))}
		m, ok, problem := parseMessage(gjson.Get(view(line), "message"), loc, opts.SkipObservationContent, false)
		if problem != "" || !ok || m.role != "assistant" || len(m.calls) < len(a.Calls) {
			return &trajectory.Error{Kind: trajectory.Malformed, Line: loc.First,
				Msg:  "the line changed while it was read: " + problem,
				Hint: "leave the file alone until pvisor ends (or replay a copy)"}
		}
		a.Text, a.Reasoning = m.text, m.reasoning
		for j := range a.Calls {
			if a.Calls[j].ID != m.calls[j].ID {
				return trajectory.Errorf(loc.First, "the line changed while it was read: call %s is now %s", clip(a.Calls[j].ID), clip(m.calls[j].ID))
			}
			a.Calls[j].Arguments = m.calls[j].Arguments
		}
	}
	return nil
}

// readLine returns the line starting at off, without its newline.
func readLine(src io.ReaderAt, off int64) ([]byte, error) {
	br := bufio.NewReader(io.NewSectionReader(src, off, jsonl.MaxLineBytes+1))
	line, err := br.ReadBytes('\n')
	if err == io.EOF && len(line) > 0 {
		err = nil
	}
	return bytes.TrimSuffix(line, []byte("\n")), err
}

// onJoinedLine reports whether a record with this id sits on one of the
// joined lines the reader skipped.
func onJoinedLine(joined []jsonl.Joined, id string) bool {
	for _, j := range joined {
		for _, r := range j.Records {
			if gjson.GetBytes(r, "id").Str == id {
				return true
			}
		}
	}
	return false
}
