package trajectory

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// Format is one agent's native session format. Each trajectory/<agent>
// package provides one; the agents package lists them all.
type Format interface {
	// Agent is the name users pass to --agent.
	Agent() string
	// Detect reports whether head (the first bytes of a file, up to 64 KiB,
	// possibly cut mid-line) looks like this format.
	Detect(head []byte) bool
	// Decode reads a native file as a stream; memory stays bounded by the
	// size of the model-visible content kept, never by the file size.
	Decode(r io.Reader, opts Options) (*Trajectory, error)
	// PrefixExt is the file extension of native files, "jsonl" or "json".
	PrefixExt() string
	// WritePrefix writes the native records up to and including step
	// afterStep, in the agent's own format. src is the original file.
	WritePrefix(w io.Writer, src io.ReaderAt, size int64, t *Trajectory, afterStep int) error
	// ReplayTools lists the native tool names the replay re-executes.
	ReplayTools() []string
	// CheckReplayable returns nil when the replay will re-execute the call,
	// or an error saying why not (an unknown tool, or an argument the replay
	// cannot honour, such as a background shell).
	CheckReplayable(call *ToolCall) error
	// PrefixModelTurns counts the model turns the prefix up to afterStep
	// consumed, the quantity --max-steps budgets.
	PrefixModelTurns(t *Trajectory, afterStep int) int
}

// RunRefuser is implemented by formats pvisor can decode and prepare but
// not replay or continue (the agent's own runtime would be needed and
// cannot be installed), or not every trajectory of. The engine asks before
// anything runs, for every mode but --prepare-only; the error says why, and
// the run ends as an unsupported agent (exit 11).
type RunRefuser interface {
	RefuseRun(t *Trajectory, continuation bool) error
}

// PrefixDecoder is a Format that can decode for a plan ending at a step
// (prepare-only) in memory that does not grow with the file. Every line is
// still read and validated, and the fields that decide where steps begin
// and end are still read and checked, so a bad line anywhere is the error
// Decode gives for it; but the actions after step afterStep are not kept
// (Trajectory.Cut says so). src holds the bytes r streams, for formats that
// learn which lines form the prefix only at the end of the file (a chain
// that ends at the last entry) and read those lines again.
type PrefixDecoder interface {
	DecodePrefix(r io.Reader, src io.ReaderAt, opts Options, afterStep int) (*Trajectory, error)
}

// DecodePrefix decodes with f's DecodePrefix when it has one, else with
// Decode (the whole trajectory then stays in memory). A DecodePrefix that
// returns ErrNeedFull is followed by a Decode of all of src.
func DecodePrefix(f Format, r io.Reader, src io.ReaderAt, opts Options, afterStep int) (*Trajectory, error) {
	pd, ok := f.(PrefixDecoder)
	if !ok || afterStep <= 0 {
		return f.Decode(r, opts)
	}
	t, err := pd.DecodePrefix(r, src, opts, afterStep)
	if errors.Is(err, ErrNeedFull) {
		return f.Decode(io.NewSectionReader(src, 0, math.MaxInt64), opts)
	}
	return t, err
}

// A MultiSession is a Format whose files may hold several sessions (an
// OpenHands evaluation's output.jsonl), one of which Options.Instance
// chooses: a decode without a choice fails with an error IsMultiple
// recognises, and Instances lists the choices (for inspect).
type MultiSession interface {
	Instances(r io.Reader) ([]Instance, error)
	IsMultiple(err error) bool
}

// Instance is one session of a file holding several.
type Instance struct {
	ID     string `json:"instance_id"` // "" when it has none
	Line   int    `json:"line"`
	Events int    `json:"events"` // its length in the native unit
}

// Options tune a decode.
type Options struct {
	// SkipObservationContent leaves Observation.Content empty, for callers
	// (inspect, prepare) that only need the shape of the session.
	SkipObservationContent bool
	// Instance picks one record of a file holding several sessions (the
	// instance_id of an OpenHands evaluation output.jsonl line); "" means
	// the file must hold one.
	Instance string
}

// Kind classifies a decode failure; the command maps it to an exit code.
type Kind int

const (
	// Malformed: the file is not a valid session of the format (exit 10).
	Malformed Kind = iota
	// Unsupported: a valid session this version of pvisor cannot replay,
	// such as a forked Codex rollout or an unknown format version (exit 11).
	Unsupported
)

// Error is a decode or boundary failure that names where in the file it is.
type Error struct {
	Kind Kind
	Line int // 1-based line (or record) number; 0 when not about one line
	Msg  string
	Hint string // what the user can do, "" when nothing
}

func (e *Error) Error() string {
	s := e.Msg
	if e.Line > 0 {
		s = fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// Errorf builds a Malformed error at line.
func Errorf(line int, format string, args ...any) *Error {
	return &Error{Kind: Malformed, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Unsupportedf builds an Unsupported error at line.
func Unsupportedf(line int, format string, args ...any) *Error {
	return &Error{Kind: Unsupported, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// IsUnsupported reports whether err is an Unsupported decode error.
func IsUnsupported(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == Unsupported
}

// CheckBoundary verifies that afterStep names a complete batch that the
// replay can reach: every earlier action must be complete or text-only.
func CheckBoundary(t *Trajectory, afterStep int) error {
	steps := t.Steps()
	if afterStep < 1 {
		return &Error{Kind: Malformed, Msg: fmt.Sprintf("after-step %d: steps are numbered from 1", afterStep),
			Hint: "run 'pvisor inspect FILE' to list the steps"}
	}
	if afterStep > len(steps) {
		msg := fmt.Sprintf("after-step %d: trajectory has %d complete steps", afterStep, len(steps))
		if len(steps) > 0 {
			msg += fmt.Sprintf(" (last complete step ends at %s)", steps[len(steps)-1].Locator)
		}
		return &Error{Kind: Malformed, Msg: msg, Hint: "run 'pvisor inspect FILE' to list the steps"}
	}
	for i := range t.Actions {
		a := &t.Actions[i]
		if a.Step == afterStep {
			return nil
		}
		if len(a.Calls) > 0 && !a.Complete() {
			for _, c := range a.Calls {
				if c.Observation == nil {
					return &Error{Kind: Malformed, Line: c.Locator.First,
						Msg:  fmt.Sprintf("after-step %d: tool call %s (%s) before the boundary has no result", afterStep, c.ID, c.Name),
						Hint: "choose an earlier step"}
				}
			}
		}
	}
	return nil
}

// CheckPrefixTools returns an error naming the first call in steps
// 1..afterStep the format will not re-execute.
func CheckPrefixTools(f Format, t *Trajectory, afterStep int) []StaleCall {
	var stale []StaleCall
	for i := range t.Actions {
		a := &t.Actions[i]
		if a.Step == 0 {
			continue
		}
		if a.Step > afterStep {
			break
		}
		for j := range a.Calls {
			if err := f.CheckReplayable(&a.Calls[j]); err != nil {
				stale = append(stale, StaleCall{Step: a.Step, Call: &a.Calls[j], Reason: err.Error(), EndsEpisode: errors.Is(err, ErrEndsEpisode)})
			}
		}
	}
	return stale
}

// StaleCall is a prefix call whose original observation would have to be
// reused because the replay cannot re-execute it.
type StaleCall struct {
	Step   int
	Call   *ToolCall
	Reason string
	// EndsEpisode: the call ends the agent's episode (a submission), so
	// no replay can go past it, stale or not.
	EndsEpisode bool
}

// PvisorLocated is implemented by formats whose steps pVisor's manifest
// names otherwise than "events:FIRST-LAST" (the 0-based range of records
// a step spans, as for Codex and OpenCode): the native_locator pVisor
// writes for each of steps 1..afterStep, read from src where the format
// needs more than the steps hold.
type PvisorLocated interface {
	PvisorLocators(src io.ReaderAt, size int64, t *Trajectory, afterStep int) ([]string, error)
}

// ErrEndsEpisode is wrapped by CheckReplayable errors of calls that end the
// agent's episode (mini-swe-agent's submission, OpenHands' finish,
// SWE-agent's submit).
var ErrEndsEpisode = errors.New("ends the episode")

func (s StaleCall) Error() string {
	return fmt.Sprintf("step %d: tool %q (call %s) cannot be replayed: %s", s.Step, s.Call.Name, s.Call.ID, s.Reason)
}

// PrefixExt is the extension of the native files written for t: formats
// whose sub-formats differ (an OpenCode export is JSON, its event stream
// JSONL) say so per trajectory through a PrefixExtFor method.
func PrefixExt(f Format, t *Trajectory) string {
	if x, ok := f.(interface{ PrefixExtFor(*Trajectory) string }); ok {
		return x.PrefixExtFor(t)
	}
	return f.PrefixExt()
}

// RebuildExt is the extension of the rebuilt session for t: usually the
// prefix's, but an OpenCode run-event stream is rebuilt as an export (JSON)
// because that is what the agent imports.
func RebuildExt(f Format, t *Trajectory) string {
	if x, ok := f.(interface{ RebuildExt(*Trajectory) string }); ok {
		return x.RebuildExt(t)
	}
	return PrefixExt(f, t)
}

// StepLocators is name applied to each of steps 1..afterStep, the loop of
// most PvisorLocators.
func StepLocators(t *Trajectory, afterStep int, name func(Locator) string) []string {
	var out []string
	for _, a := range t.Steps() {
		if a.Step > afterStep {
			break
		}
		out = append(out, name(a.Locator))
	}
	return out
}
