package opencode

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/internal/rawjson"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// decodeEvents reads `opencode run --format json` stdout. The CLI prints a
// part once it is final, so tool_use lines normally carry completed or error
// states; earlier states are merged by callID in case a wrapper logged them.
// A limit > 0 keeps only the steps up to that one (DecodePrefix): a step is
// final once it closes, since tool parts merge only within the open step.
func decodeEvents(r io.Reader, opts trajectory.Options, limit int) (*trajectory.Trajectory, error) {
	b := newBuilder(opts)
	b.cut.Limit = limit
	b.t.Format = SubFormatRunEvents
	b.guessCwd = true
	var (
		session    string
		sessLine   int
		stepMsgID  string
		recognized int
	)
	jr := jsonl.NewReader(r)
	for jr.Next() {
		ln := jr.Line()
		rec := gjson.Parse(view(ln.Data))
		// One walk of the line reads the top members, and the part's own
		// members and a tool's where the part lies: its state can be long,
		// and stepping over it first would read it twice.
		var top [4]gjson.Result
		var pf [3]gjson.Result
		var tp toolPart
		rawjson.EachOfNested(rec, topFields, "part", partKeys, func(k, v gjson.Result) bool {
			if i := slices.Index(topFields, k.Str); i >= 0 && !top[i].Exists() {
				top[i] = v
			}
			return true
		}, func(k, v gjson.Result) bool {
			if top[1].Exists() {
				return true // a repeated "part": the first one counts
			}
			if i := slices.Index(partFields, k.Str); i >= 0 && !pf[i].Exists() {
				pf[i] = v
			}
			tp.member(k, v)
			return true
		})
		typ, part, props := top[0], top[1], top[3]
		if !typ.Exists() && isBusEvent(ln.Data) || typ.Type == gjson.String && strings.Contains(typ.Str, ".") && props.Exists() {
			return nil, &trajectory.Error{Kind: trajectory.Unsupported, Line: ln.N,
				Msg:  fmt.Sprintf("this is a capture of the OpenCode server's /event bus (%s), not a session", clip(busType(rec))),
				Hint: "replay `opencode run --format json` output or an `opencode export <session id>` document of the same session"}
		}
		if typ.Type != gjson.String {
			return nil, trajectory.Errorf(ln.N, "record has no string \"type\"; not an `opencode run --format json` event")
		}
		if !runEventTypes[typ.Str] {
			// Forward compatibility: newer CLIs may print more kinds.
			continue
		}
		recognized++
		sid := top[2].Str
		if sid == "" {
			sid = pf[1].Str
		}
		if sid != "" {
			if session == "" {
				session, sessLine = strings.Clone(sid), ln.N
			} else if sid != session {
				return nil, &trajectory.Error{Kind: trajectory.Malformed, Line: ln.N,
					Msg: fmt.Sprintf("event of session %s, but line %d began session %s: the file holds several runs",
						clip(sid), sessLine, clip(session)),
					Hint: fmt.Sprintf("split it by session, e.g. jq -c 'select(.sessionID==\"%s\")'", session)}
			}
		}
		loc := trajectory.Locator{Unit: "line", First: ln.N, Last: ln.N, StartByte: ln.Offset, EndByte: ln.End}
		if typ.Str == "error" {
			// A session error ends the step it interrupted; the step keeps
			// what it had, and the error is not part of it.
			b.close()
			continue
		}
		if !part.IsObject() {
			return nil, trajectory.Errorf(ln.N, "%s event has no part object", typ.Str)
		}
		wantPart := partOf[typ.Str]
		if pt := pf[0].Str; pt != wantPart {
			return nil, trajectory.Errorf(ln.N, "%s event carries a part of type %q, want %q", typ.Str, clip(pt), wantPart)
		}
		msgID := pf[2].Str
		if typ.Str == "step_start" {
			b.open(loc)
			stepMsgID = strings.Clone(msgID)
			continue
		}
		if !b.isOpen() {
			return nil, &trajectory.Error{Kind: trajectory.Malformed, Line: ln.N,
				Msg:  fmt.Sprintf("%s event outside a step (no step_start before it)", typ.Str),
				Hint: "the file must be the complete stdout of `opencode run --format json`"}
		}
		if msgID != "" && stepMsgID != "" && msgID != stepMsgID {
			return nil, trajectory.Errorf(ln.N, "%s event belongs to message %s, but the open step is message %s (missing step_finish?)",
				typ.Str, clip(msgID), clip(stepMsgID))
		}
		switch typ.Str {
		case "text":
			b.addText(part, false, loc)
		case "reasoning":
			b.addText(part, true, loc)
		case "tool_use":
			if msg := b.addToolPart(tp, loc); msg != "" {
				return nil, trajectory.Errorf(ln.N, "%s", msg)
			}
		case "step_finish":
			b.extend(loc)
			b.close()
		}
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	if recognized == 0 {
		return nil, &trajectory.Error{Kind: trajectory.Malformed, Line: 1,
			Msg:  "no OpenCode run events (step_start, text, reasoning, tool_use, step_finish, error)",
			Hint: "expected `opencode run --format json` output or an `opencode export` document"}
	}
	b.close()
	t := b.t
	t.SessionID = session
	t.TornTail = jr.Torn()
	t.Lines = jr.Lines()
	t.NumberSteps()
	return t, nil
}

// The keys decodeEvents reads, in the order of its arrays.
var (
	topFields  = []string{"type", "part", "sessionID", "properties"}
	partFields = []string{"type", "sessionID", "messageID"}
	// partKeys are partFields and the members a tool part adds.
	partKeys = append(slices.Clip(partFields), toolPartKeys...)
)

// partOf is the part type each run event carries.
var partOf = map[string]string{"step_start": "step-start", "step_finish": "step-finish",
	"text": "text", "reasoning": "reasoning", "tool_use": "tool"}

func busType(rec gjson.Result) string {
	if t := rec.Get("event.type").Str; t != "" {
		return t
	}
	return rec.Get("type").Str
}
