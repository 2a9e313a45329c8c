package pi

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
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
func decodeSession(jr *jsonl.Reader, h header, opts trajectory.Options) (*trajectory.Trajectory, error) {
	t := newTrajectory(h, sessionFormat(h.version))
	tree := h.version >= 2
	var entries []entry
	index := map[string]int{}
	for ok := true; ok; ok = jr.Next() {
		ln := jr.Line()
		var typ, id, parent, msg gjson.Result
		gjson.Parse(view(ln.Data)).ForEach(func(k, v gjson.Result) bool {
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
			m, ok, problem := parseMessage(msg, e.loc, opts.SkipObservationContent)
			if problem != "" {
				return nil, trajectory.Errorf(ln.N, "%s", problem)
			}
			if ok {
				e.msg = &m
			}
		}
		if tree || e.msg != nil {
			entries = append(entries, e)
		}
	}
	if err := jr.Err(); err != nil {
		return nil, err
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
	k := newLinker(t, false)
	for i := range entries {
		e := &entries[i]
		if e.msg == nil || onBranch != nil && !onBranch[i] {
			continue
		}
		if e.msg.role == "assistant" {
			k.assistant(e.msg, e.loc)
			continue
		}
		if problem := k.result(e.msg, e.loc); problem != "" {
			return nil, trajectory.Errorf(e.loc.First, "%s", problem)
		}
	}
	k.finish()
	t.TornTail, t.Lines = jr.Torn(), jr.Lines()
	for _, j := range jr.Joined() {
		t.Joined = append(t.Joined, trajectory.JoinedLine{Line: j.Line, Records: len(j.Records)})
	}
	t.NumberSteps()
	return t, nil
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
