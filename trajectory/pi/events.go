package pi

import (
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/jsonl"
)

// sessionEntryTypes are the entry kinds of a session file, which never occur
// in an event stream.
var sessionEntryTypes = map[string]bool{
	"message": true, "model_change": true, "thinking_level_change": true, "compaction": true,
	"branch_summary": true, "custom": true, "custom_message": true, "label": true, "session_info": true,
}

// decodeEvents reads `pi --mode json` (or --mode rpc) stdout; jr stands on
// the first event. Each message is reported whole by message_end, and again
// inside turn_end (the assistant message and its toolResults) and agent_end;
// message_end is used when present, turn_end fills in what a trimmed stream
// lacks, agent_end is ignored. tool_execution_end results and toolResult
// messages of one call merge.
//
// With a limit (DecodePrefix) the responses after that step are dropped as
// the next one begins, and once the boundary is settled messages are parsed
// lean (checked, nothing kept): memory stays that of the prefix, however
// long the stream.
func decodeEvents(jr *jsonl.Reader, h header, opts trajectory.Options, limit int) (*trajectory.Trajectory, error) {
	t := newTrajectory(h, SubFormatEvents)
	k := newLinker(t, true)
	cut := trajectory.Cutter{Limit: limit}
	// begin settles every earlier response (a new turn's assistant message
	// comes after the previous turn_end, which carries its results).
	begin := func(m *message, loc trajectory.Locator) {
		k.finish()
		k.cur = -1 // settled, and maybe dropped
		cut.Settle(t, nil)
		k.assistant(m, loc)
	}
	var start trajectory.Locator // message_start of the assistant message being streamed
	turnAction := -1             // the Action of the current turn, once known
	for ok := true; ok; ok = jr.Next() {
		ln := jr.Line()
		rec := gjson.Parse(view(ln.Data))
		typ := rec.Get("type").Str
		loc := lineLoc(ln)
		switch {
		case typ == "session":
			return nil, &trajectory.Error{Kind: trajectory.Malformed, Line: ln.N,
				Msg:  "a second session header: the stream holds several runs",
				Hint: "split the output at this line"}
		case sessionEntryTypes[typ]:
			return nil, trajectory.Errorf(ln.N, "%s session entry in an event stream (a session file and a --mode json stream mixed?)", clip(typ))
		}
		switch typ {
		case "turn_start":
			turnAction = -1
		case "message_start":
			if rec.Get("message.role").Str == "assistant" {
				start = loc
			}
		case "message_end":
			m, ok, problem := parseMessage(rec.Get("message"), loc, opts.SkipObservationContent || cut.Done(), cut.Done())
			if problem != "" {
				return nil, trajectory.Errorf(ln.N, "message_end: %s", problem)
			}
			if !ok {
				continue
			}
			if m.role == "assistant" {
				begin(&m, start.Extend(loc))
				start = trajectory.Locator{}
				turnAction = k.cur
				continue
			}
			if problem := k.result(&m, loc); problem != "" {
				return nil, trajectory.Errorf(ln.N, "message_end: %s", problem)
			}
		case "tool_execution_end":
			id := rec.Get("toolCallId")
			if id.Type != gjson.String || id.Str == "" {
				return nil, trajectory.Errorf(ln.N, "tool_execution_end has no toolCallId")
			}
			m := message{role: "toolResult", callID: id.Str, toolName: rec.Get("toolName").Str,
				isError: rec.Get("isError").Bool()}
			if !opts.SkipObservationContent && !cut.Done() {
				m.content = contentText(rec.Get("result.content"))
			}
			if problem := k.result(&m, loc); problem != "" {
				return nil, trajectory.Errorf(ln.N, "tool_execution_end: %s", problem)
			}
		case "turn_end":
			if turnAction < 0 {
				m, ok, problem := parseMessage(rec.Get("message"), loc, opts.SkipObservationContent || cut.Done(), cut.Done())
				if problem != "" {
					return nil, trajectory.Errorf(ln.N, "turn_end: %s", problem)
				}
				if !ok || m.role != "assistant" {
					return nil, trajectory.Errorf(ln.N, "turn_end carries no assistant message")
				}
				begin(&m, loc)
				turnAction = k.cur
			} else {
				a := &t.Actions[turnAction]
				a.Locator = a.Locator.Extend(loc)
			}
			var problem string
			rec.Get("toolResults").ForEach(func(_, r gjson.Result) bool {
				m, ok, p := parseMessage(r, loc, opts.SkipObservationContent || cut.Done(), cut.Done())
				switch {
				case p != "":
					problem = p
				case !ok || m.role != "toolResult":
					problem = "toolResults holds a message that is not a toolResult"
				default:
					problem = k.result(&m, loc)
				}
				return problem == ""
			})
			if problem != "" {
				return nil, trajectory.Errorf(ln.N, "turn_end: %s", problem)
			}
			turnAction = -1
		}
	}
	if err := jr.Err(); err != nil {
		return nil, err
	}
	k.finish()
	cut.Settle(t, nil)
	t.TornTail, t.Lines = jr.Torn(), jr.Lines()
	t.NumberSteps()
	return t, nil
}
