// Package trajectory is the agent-neutral model of a native coding-agent
// session: the model's responses (actions), the tool calls each response made,
// and the observations the tools returned. Each agent format lives in its own
// sub-package and decodes into this model; nothing here knows any format.
package trajectory

import (
	"encoding/json"
	"fmt"
)

// Trajectory is one decoded native session: every model response on the
// active branch, in order, text-only responses included.
type Trajectory struct {
	Agent   string
	Version string // agent version recorded in the file, "" when the format has none
	// When Version is unknown, MinVersion and BeforeVersion date the file
	// by what it holds: written by a release at least MinVersion (a
	// record shape that release introduced) and before BeforeVersion (a
	// shape that release removed); "" where nothing bounds it.
	MinVersion    string `json:",omitempty"`
	BeforeVersion string `json:",omitempty"`
	SessionID     string
	// Cwd is the working directory the agent recorded, "" when the format
	// does not record one.
	Cwd    string
	Format string // the native sub-format, e.g. "session-jsonl", "run-events", "mini-swe-agent-1.1"
	// Config is the agent configuration the file records, for replayers
	// that reproduce its settings (mini-swe-agent's info.config: templates,
	// environment variables, timeout); nil when the format has none.
	Config  json.RawMessage `json:"-"`
	Actions []Action
	// TornTail is set when the file's final line had no trailing newline and
	// could not be parsed; it was ignored, as agents that were killed mid-write
	// leave exactly that behind.
	TornTail *TornTail
	// Lines is the number of physical lines (JSONL) or top-level records read.
	Lines int
	// Offset is where the decoded record starts in the file when it is one
	// of several (Options.Instance); locators count from there.
	Offset int64 `json:",omitempty"`
	// Joined lists lines holding several records with no newline between
	// them, which the agent's own loader skips (and so does the decoder).
	Joined []JoinedLine `json:",omitempty"`
	// Cut, when > 0, is the step a DecodePrefix stopped keeping at: the
	// actions after step Cut were read and checked but are not in Actions.
	Cut int `json:",omitempty"`
}

// JoinedLine is one skipped line of joined records.
type JoinedLine struct {
	Line    int `json:"line"`
	Records int `json:"records"`
}

// TornTail describes an ignored, unterminated final line.
type TornTail struct {
	Line   int   // 1-based line number
	Offset int64 // byte offset where the torn line starts
	Bytes  int   // its length
}

// Action is one model response: visible text, reasoning, and the batch of tool
// calls it made (parallel calls in one response form one batch).
type Action struct {
	// Step is the 1-based ordinal among complete tool batches, the unit of
	// --after-step; 0 for a text-only response or an incomplete batch.
	Step      int
	Text      string
	Reasoning string
	Calls     []ToolCall
	// Locator spans the native records of the response and of all its results.
	Locator Locator
}

// Complete reports whether the action is a batch whose every call has a result.
func (a *Action) Complete() bool {
	if len(a.Calls) == 0 {
		return false
	}
	for i := range a.Calls {
		if a.Calls[i].Observation == nil {
			return false
		}
	}
	return true
}

// ToolCall is one native tool invocation.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage // always a JSON value; a freeform input is a JSON string
	// Observation is nil while the call has no result in the file.
	Observation *Observation
	Locator     Locator // the record(s) that hold the call
	// Cwd is the working directory the agent recorded for this call, ""
	// when the format does not record one per call (Claude Code writes the
	// shell's directory on every entry).
	Cwd string
}

// Observation is what the tool returned, as the model saw it.
type Observation struct {
	// Content is the model-visible result text. Decoders fill it unless the
	// caller asked for a lean decode (Options.SkipObservationContent).
	Content string
	IsError bool
	Locator Locator // the record(s) that hold the result
}

// Locator points back at the native records something came from: 1-based
// inclusive line numbers for line-oriented files, or element indexes for
// JSON documents (Unit says which), plus the byte range in the file.
type Locator struct {
	Unit      string `json:"unit"` // "line", "event" (index into a JSON array), "message"
	First     int    `json:"first"`
	Last      int    `json:"last"`
	StartByte int64  `json:"start_byte"`
	EndByte   int64  `json:"end_byte"` // exclusive
}

// Extend widens l to cover o as well.
func (l Locator) Extend(o Locator) Locator {
	if l.Unit == "" {
		return o
	}
	if o.Unit == "" {
		return l
	}
	if o.First < l.First {
		l.First, l.StartByte = o.First, o.StartByte
	}
	if o.Last > l.Last {
		l.Last = o.Last
	}
	if o.EndByte > l.EndByte {
		l.EndByte = o.EndByte
	}
	return l
}

func (l Locator) String() string {
	unit := l.Unit
	if unit == "" {
		return "unknown position"
	}
	if l.First == l.Last {
		return fmt.Sprintf("%s %d", unit, l.First)
	}
	return fmt.Sprintf("%ss %d-%d", unit, l.First, l.Last)
}

// Steps returns the complete tool batches, in order; Steps()[i].Step == i+1.
func (t *Trajectory) Steps() []*Action {
	var out []*Action
	for i := range t.Actions {
		if t.Actions[i].Step > 0 {
			out = append(out, &t.Actions[i])
		}
	}
	return out
}

// NumberSteps assigns Step ordinals: each complete batch gets the next number.
// A batch after an incomplete one is still numbered, since an agent that was
// interrupted may have gone on; the boundary check refuses to cross it.
func (t *Trajectory) NumberSteps() {
	n := 0
	for i := range t.Actions {
		t.Actions[i].Step = 0
		if t.Actions[i].Complete() {
			n++
			t.Actions[i].Step = n
		}
	}
}

// Step returns the action with the given 1-based step ordinal.
func (t *Trajectory) Step(n int) (*Action, bool) {
	for i := range t.Actions {
		if t.Actions[i].Step == n && n > 0 {
			return &t.Actions[i], true
		}
	}
	return nil, false
}

// ActionIndex returns the index in Actions of step n, or -1.
func (t *Trajectory) ActionIndex(n int) int {
	for i := range t.Actions {
		if t.Actions[i].Step == n && n > 0 {
			return i
		}
	}
	return -1
}
