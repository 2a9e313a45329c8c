package trajectory

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/pvisor/pvisor/run"
)

// Replayer is implemented by formats whose prefix pvisor re-executes itself
// (claude-code, codex, opencode, pi, openhands). The engine drives it: one ToolSession
// per replay, Execute for each call of steps 1..N in order, then Rebuild.
type Replayer interface {
	// NewToolSession starts the tool state of one replay: the shell's
	// working directory, live exec sessions, background processes. The
	// session owns every process it starts; Close ends them all.
	NewToolSession(env ToolEnv) (ToolSession, error)
	// Rebuild writes the native session up to the boundary with each
	// observation of steps 1..afterStep replaced by its fresh one, and the
	// agent's structured result fields updated or removed, so nothing
	// stale remains. Every other byte stays as it was.
	Rebuild(w io.Writer, src io.ReaderAt, size int64, t *Trajectory, afterStep int, fresh map[string]Fresh) error
}

// RebuildChecker is implemented by Replayers that cannot rebuild every
// trajectory they decode (Pi's --mode json event stream has no session file
// to rebuild). The engine asks before the first tool runs, so no mode runs a
// tool and then finds it cannot finish.
type RebuildChecker interface {
	CheckRebuild(t *Trajectory) error
}

// ToolEnv is what a tool session needs from the engine.
type ToolEnv struct {
	// Workspace is where the tools run now; OriginalCwd is the directory
	// the agent ran in when it recorded the session ("" when unknown).
	// Paths under OriginalCwd in call arguments are mapped to Workspace.
	Workspace   string
	OriginalCwd string
	// Version is the agent version the session was recorded with
	// (Trajectory.Version): result shapes change between versions.
	// ContinuingVersion is the release of the CLI that continues the
	// session after the replay ("" in --replay-only): for agents whose
	// files record no version, the release the tools are most likely
	// reproduced as.
	Version, ContinuingVersion string
	// Env is the environment tools run with (already filtered).
	Env []string
	// LogDir receives the full output of each call (logs/historical-tools).
	LogDir string
	// DefaultTimeout applies when a call carries no timeout of its own
	// and the agent has no default; 0 means the agent's own default.
	DefaultTimeout time.Duration
	// Isolation is how far tools are kept from pvisor (run.Isolation);
	// every Runner of the session uses it.
	Isolation run.Isolation
	// Trajectory is the decoded session being replayed, for replayers
	// whose results depend on more than the call (mini-swe-agent renders
	// them with the templates of its saved Config and the model-call count).
	Trajectory *Trajectory
}

// ToolSession re-executes native calls with one agent's semantics.
type ToolSession interface {
	// Execute runs one call and returns its fresh observation in the
	// agent's native shape. A tool that fails the way it failed for the
	// agent (non-zero exit, file not found) is a Fresh with IsError, not an
	// error: err is only for failures of pvisor itself (could not start a
	// process, could not write a log), which make the replay ambiguous.
	Execute(ctx context.Context, step int, call *ToolCall) (Fresh, error)
	Close() error
}

// SemanticsReporter is implemented by a ToolSession whose results depend on
// the agent release it reproduces: which release, and why, for the result's
// metadata (tool_semantics).
type SemanticsReporter interface {
	Semantics() map[string]any
}

// Fresh is one re-executed call's result.
type Fresh struct {
	// Content is the model-visible text, exactly as the agent would have
	// recorded it (compared against Observation.Content).
	Content string
	IsError bool
	// Native is the format's own replacement for the result record's
	// structured fields (e.g. Claude's toolUseResult); nil removes them.
	Native json.RawMessage
	// ExitCode is the shell's exit status, when the call ran a process.
	ExitCode *int
	Duration time.Duration
	// LogPath is where the full output was kept, "" when nothing was run.
	LogPath string
	// Reused marks a recorded observation kept because the call could not
	// be re-run (--allow-stale-observations): Rebuild keeps its record as
	// it was, structured fields included.
	Reused bool
}

// Normalizer is implemented by formats whose results carry fields that
// differ on every run however faithful the replay (a random chunk id, a
// measured wall time). The comparison reports exactness on the raw text and,
// separately, on the normalised text.
type Normalizer interface {
	NormalizeObservation(content string) string
}

// Dirs checks the workspace (absolute, an existing directory) and creates
// the log dir when one is set, for a ToolSession about to start; agent
// names the caller in the errors.
func (e ToolEnv) Dirs(agent string) (workspace string, err error) {
	ws, err := filepath.Abs(e.Workspace)
	if err != nil || e.Workspace == "" {
		return "", fmt.Errorf("%s: workspace %q is not usable", agent, e.Workspace)
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s: workspace %s is not a directory", agent, ws)
	}
	if e.LogDir != "" {
		if err := os.MkdirAll(e.LogDir, 0o700); err != nil {
			return "", fmt.Errorf("%s: log dir: %w", agent, err)
		}
	}
	return ws, nil
}
