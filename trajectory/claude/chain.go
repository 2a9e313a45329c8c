package claude

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pvisor/pvisor/trajectory"
)

// act is one model response while it is being assembled.
type act struct {
	msg     int32
	frags   []int32 // assistant entry indexes
	results []int32 // user entry indexes whose tool_results pair with frags
}

type callRef struct{ act, call int }

func (d *decoder) build(src io.ReaderAt, limit int) (*trajectory.Trajectory, error) {
	if d.leaf < 0 {
		if d.sideLines > 0 {
			return nil, d.subagentError()
		}
		return nil, &trajectory.Error{Kind: trajectory.Malformed,
			Msg:  "no main-thread user or assistant entry: not a Claude Code session",
			Hint: "Claude Code sessions live in ~/.claude/projects/<project>/<session-id>.jsonl"}
	}
	// The uuid and message id tables are done with once the chain is
	// known: on a large file they are a good part of the memory left.
	d.msgIDs = nil
	chain, err := d.walk()
	if err != nil {
		return nil, err
	}
	d.ids = idTable{}
	acts, err := d.group(chain)
	if err != nil {
		return nil, err
	}
	d.entryOf = nil
	t := &trajectory.Trajectory{Agent: AgentName, Format: "session-jsonl"}
	for _, ei := range chain {
		e := d.entries.at(ei)
		if e.version != 0 {
			t.Version = d.versions.list[e.version]
		}
		if e.session != 0 {
			t.SessionID = d.sessions.list[e.session]
		}
		// The first entry records the directory the session was started
		// in: the project directory the session file is keyed by, and the
		// root of the paths in its calls. Later entries follow the shell's
		// cd.
		if e.cwd != 0 && t.Cwd == "" {
			t.Cwd = d.cwds.list[e.cwd]
		}
	}
	if d.lean {
		return d.prefix(t, acts, src, limit)
	}
	if err := d.materialize(t, acts, len(acts)); err != nil {
		return nil, err
	}
	t.NumberSteps()
	return t, nil
}

func (d *decoder) subagentError() error {
	msg := "this is a Claude Code subagent transcript: every entry has isSidechain=true"
	if d.sideAgent != "" {
		msg += fmt.Sprintf(" (agentId %s)", d.sideAgent)
	}
	hint := "pass the parent session file instead"
	if d.sideSession != "" && !strings.HasPrefix(d.sideSession, "agent-") {
		hint += fmt.Sprintf(": %s.jsonl in the same project directory", d.sideSession)
	}
	return &trajectory.Error{Kind: trajectory.Unsupported, Line: 1, Msg: msg, Hint: hint}
}

// walk follows parentUuid from the leaf, the last main user/assistant entry,
// back to a root, like Claude Code's own resume. (Claude Code picks the
// newest leaf by timestamp; in a file it wrote that is the last one.)
func (d *decoder) walk() ([]int32, error) {
	var chain []int32
	for cur := d.leaf; cur >= 0; {
		e := d.entries.at(cur)
		if e.flags&flagOnChain != 0 {
			return nil, trajectory.Errorf(int(e.line), "parentUuid chain loops back to uuid %s", d.ids.name(e.uuid))
		}
		e.flags |= flagOnChain
		chain = append(chain, cur)
		if e.parent < 0 {
			break
		}
		p := d.entryOf[e.parent]
		if p < 0 {
			if e.flags&flagLogical != 0 {
				// The pre-compaction history is not in this file; the
				// agent itself never needs it, so the chain starts here.
				break
			}
			return nil, &trajectory.Error{Kind: trajectory.Malformed, Line: int(e.line),
				Msg:  fmt.Sprintf("parentUuid %s is not a main-thread entry of this file: the conversation chain is broken", d.ids.name(e.parent)),
				Hint: "was the file truncated at the start or assembled from several sessions?"}
		}
		cur = p
	}
	slices.Reverse(chain)
	return chain, nil
}

// group splits the chain into model responses. Claude Code writes one
// content block per entry; the entries of one response share message.id
// and follow each other on the chain, possibly with the tool_result entries
// of earlier blocks in between (tools start while the model still streams).
func (d *decoder) group(chain []int32) ([]act, error) {
	var acts []act
	byMsg := make(map[int32]int)
	open := false
	for _, ei := range chain {
		e := d.entries.at(ei)
		switch e.kind {
		case kindAssistant:
			if e.flags&flagSynthetic != 0 {
				open = false
				continue
			}
			if open && e.msg >= 0 && acts[len(acts)-1].msg == e.msg {
				acts[len(acts)-1].frags = append(acts[len(acts)-1].frags, ei)
				e.flags |= flagUsed
				continue
			}
			if e.msg >= 0 {
				if i, ok := byMsg[e.msg]; ok {
					if d.lean {
						return nil, trajectory.ErrNeedFull // for the error, which names the message
					}
					return nil, trajectory.Errorf(int(e.line),
						"assistant entry of response %s is separated from the rest of that response (line %d) by other messages",
						d.msgNames[e.msg], d.entries.at(acts[i].frags[0]).line)
				}
				byMsg[e.msg] = len(acts)
			}
			acts = append(acts, act{msg: e.msg, frags: []int32{ei}})
			e.flags |= flagUsed
			open = true
		case kindUser:
			if e.flags&flagResults != 0 {
				if len(acts) > 0 {
					acts[len(acts)-1].results = append(acts[len(acts)-1].results, ei)
				} else {
					return nil, d.unmatched(e, 0)
				}
			} else {
				open = false
			}
		}
	}
	d.recoverSiblings(acts, byMsg)
	return acts, nil
}

// recoverSiblings adds the blocks and results that a plain parentUuid walk
// misses. Since 2.1 Claude Code links each tool_result to the assistant
// entry holding its own tool_use, so the parallel calls of one response form
// a small tree and only one branch of it lies on the chain; Claude Code's
// loader re-attaches the other assistant entries with the same message.id
// and the tool_result entries whose parent is one of them, and so do we.
func (d *decoder) recoverSiblings(acts []act, byMsg map[int32]int) {
	if len(byMsg) == 0 {
		return
	}
	touched := false
	for i := int32(0); i < d.entries.len(); i++ {
		e := d.entries.at(i)
		if e.flags&(flagOnChain|flagUsed) != 0 {
			continue
		}
		switch {
		case e.kind == kindAssistant && e.msg >= 0 && e.flags&flagSynthetic == 0:
			if a, ok := byMsg[e.msg]; ok {
				acts[a].frags = append(acts[a].frags, int32(i))
				e.flags |= flagUsed
				touched = true
			}
		case e.kind == kindUser && e.flags&flagResults != 0 && e.parent >= 0:
			p := d.entryOf[e.parent]
			if p < 0 || d.entries.at(p).kind != kindAssistant || d.entries.at(p).msg < 0 {
				continue
			}
			if a, ok := byMsg[d.entries.at(p).msg]; ok {
				acts[a].results = append(acts[a].results, int32(i))
				touched = true
			}
		}
	}
	if !touched {
		return
	}
	// Entry indexes follow the file, and the file follows the order in
	// which the blocks were streamed and the results arrived.
	for i := range acts {
		slices.Sort(acts[i].frags)
		slices.Sort(acts[i].results)
	}
}

func (d *decoder) loc(ei int32) trajectory.Locator {
	e := d.entries.at(ei)
	return trajectory.Locator{Unit: "line", First: int(e.line), Last: int(e.line), StartByte: e.start, EndByte: e.end}
}

func (d *decoder) unmatched(e *entry, i int) error {
	if d.lean {
		return trajectory.ErrNeedFull // for the error, which names the id
	}
	return trajectory.Errorf(int(e.line), "tool_result for tool_use_id %s matches no tool_use on the conversation chain",
		d.rbodies[int(e.data)+i].toolUseID)
}

// materialize builds the first keep acts' actions; results of later acts
// whose calls are not among them are skipped (a lean pass checked them).
func (d *decoder) materialize(t *trajectory.Trajectory, acts []act, keep int) error {
	t.Actions = make([]trajectory.Action, keep)
	calls := make(map[uint64]callRef)
	for ai := range acts[:keep] {
		a := &t.Actions[ai]
		a.Text, a.Reasoning = d.texts(acts[ai].frags)
		for _, ei := range acts[ai].frags {
			e := d.entries.at(ei)
			loc := d.loc(ei)
			a.Locator = a.Locator.Extend(loc)
			for bi := e.data; bi < e.data+e.ndata; bi++ {
				b := &d.blocks[bi]
				switch b.kind {
				case blockToolUse:
					if prev, dup := calls[b.id]; dup {
						if d.lean {
							return trajectory.ErrNeedFull
						}
						return trajectory.Errorf(loc.First, "duplicate tool_use id %s (first at line %d)",
							d.bodies[bi].text, t.Actions[prev.act].Calls[prev.call].Locator.First)
					}
					calls[b.id] = callRef{ai, len(a.Calls)}
					c := trajectory.ToolCall{Name: d.toolNames[b.name], Locator: loc}
					if !d.lean { // else refill reads them again
						c.ID, c.Arguments = d.bodies[bi].text, d.bodies[bi].input
					}
					if e.cwd != 0 {
						c.Cwd = d.cwds.list[e.cwd]
					}
					a.Calls = append(a.Calls, c)
				}
			}
		}
	}
	for ai := range acts {
		for _, ei := range acts[ai].results {
			e := d.entries.at(ei)
			loc := d.loc(ei)
			for i := range e.ndata {
				r := &d.results[e.data+i]
				ref, ok := calls[r.id]
				if !ok && keep < len(acts) {
					continue
				}
				if !ok {
					return d.unmatched(e, int(i))
				}
				c := &t.Actions[ref.act].Calls[ref.call]
				if c.Observation != nil {
					if d.lean {
						return trajectory.ErrNeedFull
					}
					return trajectory.Errorf(loc.First, "second tool_result for tool_use_id %s (first at line %d)",
						d.rbodies[e.data+i].toolUseID, c.Observation.Locator.First)
				}
				c.Observation = &trajectory.Observation{IsError: r.isError, Locator: loc}
				if !d.lean {
					c.Observation.Content = d.rbodies[e.data+i].content
				}
				owner := &t.Actions[ref.act]
				owner.Locator = owner.Locator.Extend(loc)
			}
		}
	}
	return nil
}

// texts joins the text and the thinking blocks of a response's entries.
func (d *decoder) texts(frags []int32) (text, reasoning string) {
	ts, rs := d.scratch[0][:0], d.scratch[1][:0]
	defer func() { d.scratch[0], d.scratch[1] = ts, rs }()
	for _, ei := range frags {
		e := d.entries.at(ei)
		if d.lean {
			break // refill reads them again
		}
		for bi := e.data; bi < e.data+e.ndata; bi++ {
			switch d.blocks[bi].kind {
			case blockText:
				ts = append(ts, d.bodies[bi].text)
			case blockThinking:
				rs = append(rs, d.bodies[bi].text)
			}
		}
	}
	return strings.Join(ts, "\n"), strings.Join(rs, "\n")
}
