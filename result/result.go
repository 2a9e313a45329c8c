// Package result holds the sandbox-playback.result/v3 contract, the replay
// journal and the JSON artifacts a run leaves behind, all written atomically.
package result

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// SchemaVersion is the result contract shared with existing sandbox-playback tooling.
const SchemaVersion = "sandbox-playback.result/v3"

// Phases, qualities and agent statuses of a result.
const (
	PhasePrepared  = "prepared"
	PhaseReplayed  = "replayed"
	PhaseContinued = "continued"

	QualityVerified = "verified"
	QualityDegraded = "degraded"

	AgentNotStarted = "not_started"
	AgentCompleted  = "completed"
	AgentMaxSteps   = "max_steps"
	AgentFailed     = "failed"
)

// Launch sources: where the agent entrypoint came from.
const (
	LaunchPrepareOnly = "prepare_only"
	LaunchExplicit    = "explicit_entrypoint"
	LaunchPath        = "path"
	LaunchRuntime     = "runtime_manifest"
)

// Result is printed as one JSON line on stdout and saved as result.json. The
// same shape is used for every outcome, including a bad flag: fields that
// have no value yet are null rather than missing.
type Result struct {
	SchemaVersion     string         `json:"schema_version"`
	Phase             *string        `json:"phase"`
	Quality           string         `json:"quality"`
	AgentStatus       string         `json:"agent_status"`
	RunID             string         `json:"run_id"`
	Agent             Agent          `json:"agent"`
	AfterStep         int            `json:"after_step"`
	ReplayedToolCalls int            `json:"replayed_tool_calls"`
	PrefixModelTurns  int            `json:"prefix_model_turns"`
	ContinuedSteps    int            `json:"continued_steps"`
	StateDir          *string        `json:"state_dir"`
	OutputDir         *string        `json:"output_dir"`
	Artifacts         []Artifact     `json:"artifacts"`
	Failure           *Failure       `json:"failure"`
	Retryable         bool           `json:"retryable"`
	Metadata          map[string]any `json:"metadata"`

	early bool // failed before the run had directories (see MarkEarly)
}

// Agent identifies the agent a run is for.
type Agent struct {
	Type         string  `json:"type"`
	Version      *string `json:"version"`
	Entrypoint   *string `json:"entrypoint"`
	LaunchSource string  `json:"launch_source"`
	// DisallowedTools are the tools the continued agent was denied.
	DisallowedTools []string `json:"disallowed_tools"`
}

// Artifact is one file or directory a run produced.
type Artifact struct {
	Role   string `json:"role"`
	Format string `json:"format"`
	Path   string `json:"path"`
}

// Failure says why a run did not succeed. As an error it is a refusal with
// its category, which the engine and every agent's launcher return.
type Failure struct {
	Category string `json:"category"`
	Message  string `json:"message"`
}

func (f *Failure) Error() string { return f.Message }

// Fail is a refusal of category with a message that says what to do.
func Fail(category, format string, args ...any) *Failure {
	return &Failure{Category: category, Message: fmt.Sprintf(format, args...)}
}

// New returns a result with every collection non-nil, so it always encodes
// with the full v3 shape.
func New(runID, agent string) *Result {
	return &Result{
		SchemaVersion: SchemaVersion,
		Quality:       QualityDegraded,
		AgentStatus:   AgentNotStarted,
		RunID:         runID,
		Agent:         Agent{Type: agent, LaunchSource: LaunchPrepareOnly, DisallowedTools: []string{}},
		Artifacts:     []Artifact{},
		Metadata:      map[string]any{},
	}
}

// MarkEarly marks a failure that came before the run allocated its state
// and output directories. pVisor prints its reduced object then, with phase
// and quality null; ours keeps the other v3 fields too (additions a reader
// of the reduced object ignores).
func (r *Result) MarkEarly() {
	r.early = true
	r.Phase = nil
}

// MarshalJSON writes quality as null for an early failure.
func (r *Result) MarshalJSON() ([]byte, error) {
	type plain Result
	var v any = (*plain)(r)
	if r.early {
		v = struct {
			*plain
			Quality *string `json:"quality"`
		}{plain: (*plain)(r)}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// UnmarshalJSON reads a result line back (the overlay worker's): a null
// quality is an early failure's.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	aux := struct {
		*plain
		Quality *string `json:"quality"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.early = aux.Quality == nil
	r.Quality = ""
	if aux.Quality != nil {
		r.Quality = *aux.Quality
	}
	return nil
}

// SetPhase sets the phase.
func (r *Result) SetPhase(p string) { r.Phase = &p }

// Fail records a failure; the run's quality is degraded whatever it reached.
func (r *Result) Fail(category, message string) {
	r.Failure = &Failure{Category: category, Message: message}
	r.Quality = QualityDegraded
	r.Retryable = Retryable(category)
}

// Failure categories and their exit codes.
const (
	ConfigurationError   = "configuration_error"
	TrajectoryError      = "trajectory_error"
	UnsupportedAgent     = "unsupported_agent"
	UnsupportedVersion   = "unsupported_version"
	WorkspaceError       = "workspace_error"
	ExecutorError        = "executor_error"
	AmbiguousExecution   = "ambiguous_execution"
	ContinuationError    = "continuation_error"
	ModelRateLimit       = "model_rate_limit"
	ModelInternalError   = "model_internal_error"
	ModelConnectionError = "model_connection_error"
	InternalError        = "internal_error"
	// Interrupted: a signal (Ctrl-C, SIGTERM) stopped the command before
	// its work was done; running it again resumes (pvisor batch run).
	Interrupted = "interrupted"
)

// ExitCode maps a failure category to the process exit code; nil means success.
func ExitCode(f *Failure) int {
	if f == nil {
		return 0
	}
	switch f.Category {
	case ConfigurationError:
		return 2
	case TrajectoryError:
		return 10
	case UnsupportedAgent, UnsupportedVersion:
		return 11
	case WorkspaceError:
		return 20
	case ExecutorError:
		return 30
	case AmbiguousExecution:
		return 31
	case ContinuationError, ModelRateLimit, ModelInternalError, ModelConnectionError:
		return 40
	case Interrupted:
		return 130 // 128 + SIGINT, as shells report a Ctrl-C
	default:
		return 50
	}
}

// Retryable reports whether a failure of this category may pass on a retry.
func Retryable(category string) bool {
	switch category {
	case ModelRateLimit, ModelInternalError, ModelConnectionError:
		return true
	}
	return false
}
