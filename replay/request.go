package replay

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// Mode selects how far a run goes.
type Mode int

const (
	// Continue replays the prefix and lets the real agent go on (the default).
	Continue Mode = iota
	// ReplayOnly stops before the agent's first model request.
	ReplayOnly
	// PrepareOnly parses, validates and plans; it runs no tool and no agent.
	PrepareOnly
)

func (m Mode) String() string {
	switch m {
	case ReplayOnly:
		return "replay-only"
	case PrepareOnly:
		return "prepare-only"
	default:
		return "continue"
	}
}

// Request is one replay, whether it came from flags, a TOML file or a Go
// program calling [Run]. Each field is the flag of the same name (Agent is
// --agent, AfterStep --after-step, StateRoot --state-dir); the zero value of
// a field is the flag's default.
type Request struct {
	// Agent is the agent that wrote the trajectory: claude-code, codex,
	// opencode, pi, openhands, mini-swe-agent or swe-agent.
	Agent string
	// Trajectory is the native session file.
	Trajectory string
	// Instance picks one instance (instance_id) of an OpenHands
	// evaluation output.jsonl holding several.
	Instance string `json:",omitempty"`
	// AfterStep is the boundary: steps 1..AfterStep are replayed (as
	// `pvisor inspect` numbers them).
	AfterStep int
	MaxSteps  int // total action budget including the prefix; 0 = no limit
	// MaxStepsSet says max_steps was given, so an explicit 0 is refused as
	// pVisor refuses it rather than read as "no limit".
	MaxStepsSet bool `json:",omitempty"`
	// Mode is how far the run goes: Continue (default), ReplayOnly or
	// PrepareOnly.
	Mode Mode
	// AllowStaleObservations reuses the recorded results of tools the
	// replay cannot run (the result is then degraded) instead of failing.
	AllowStaleObservations bool
	// BoundaryUserPrompt is a user message appended after the boundary
	// observation; only its length and SHA-256 are recorded.
	BoundaryUserPrompt string
	// BoundaryUserPromptFile is a prompt file for the boundary prompt
	// instead of BoundaryUserPrompt: its {{KEY}} placeholders come from
	// PromptArgs and the built-ins, its !`command` expressions run in the
	// workspace before the agent starts (see replay/prompt).
	BoundaryUserPromptFile string       `json:",omitempty"`
	PromptArgs             []prompt.Arg `json:",omitempty"`
	// RunID names the run's state and output dirs (default replay-<uuid>).
	RunID string
	// SessionID is sent upstream as X-LiteLLM-Session-ID (default: RunID).
	SessionID string
	// Workspace is the directory the tools run in (default: the current one).
	Workspace string
	// StateRoot and OutputRoot hold the run's StateRoot/RunID and
	// OutputRoot/RunID (default DefaultStateRoot, DefaultOutputRoot).
	StateRoot  string
	OutputRoot string
	// AgentEntrypoint is the agent CLI continued (default: found on PATH).
	AgentEntrypoint string
	// AgentRuntime is a directory holding sandbox-playback-agent.json,
	// which names the entrypoint and its version (pVisor's --agent-runtime).
	AgentRuntime string `json:",omitempty"`
	// AgentArgs are extra native arguments for the agent CLI.
	AgentArgs []string
	// DisallowedTools are Claude Code tools the continued agent may not
	// use (--disallowedTools), as pVisor's agent.disallowed_tools.
	DisallowedTools []string `json:",omitempty"`
	// AllowUntestedVersion runs a CLI outside the tested range (degraded).
	AllowUntestedVersion bool
	// DisableThinking turns the model's thinking off, as pVisor maps it.
	DisableThinking bool
	// Upstream is where the continued agent's model requests go: recorded,
	// anthropic, openai-responses or openai-chat (default: the agent's own
	// protocol).
	Upstream string
	// UpstreamModel is the model name sent to an openai-chat upstream that
	// serves Claude Code (whose own model names such servers do not know).
	UpstreamModel string
	// Endpoint overrides where a model upstream is and how it is reached
	// (a batch's [[models]] entry): see endpoint.go.
	Endpoint *Endpoint `json:",omitempty"`
	// IdleTimeout stops a continued agent that neither writes output nor
	// talks to the model for this long; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration `json:",omitempty"`
	// Progress reports the run on stderr: ProgressLines, ProgressLive, or
	// nothing ("" / ProgressOff). It travels to an overlay worker, which
	// reports the steps it replays itself.
	Progress string `json:",omitempty"`
	// ProgressTo receives the progress lines (default os.Stderr).
	ProgressTo io.Writer `json:"-"`

	// Verify is a shell command that grades the run: it runs after the
	// continuation (with ReplayOnly, after the prefix) in the workspace,
	// isolated and limited as replayed tools are; metadata.verify has its
	// exit code, time, output tail and verdict.
	Verify string `json:",omitempty"`
	// VerifyTimeout bounds Verify (0: DefaultVerifyTimeout).
	VerifyTimeout time.Duration `json:",omitempty"`
	// WorkspaceDiff writes workspace.diff (role workspace_diff): what the
	// continuation changed in the workspace after the replayed prefix.
	WorkspaceDiff bool `json:",omitempty"`

	Run        RunConfig
	Overlay    OverlayConfig
	Overlaynet OverlaynetConfig

	Hooks *Hooks `json:"-"`
}

// RunConfig is the [run] table: how tools are executed.
type RunConfig struct {
	// TimeoutMS bounds each replayed tool call on top of the agent's own
	// timeouts; a call that hits it is killed and the run is ambiguous.
	TimeoutMS  int
	InheritEnv bool
	PassEnv    []string
}

// OverlayConfig is the [overlayfs] table.
type OverlayConfig struct {
	Path    string
	Compose []string
	Commit  string
}

// OverlaynetConfig is the [overlaynet] table.
type OverlaynetConfig struct {
	Mode   string
	Policy string
}

// Default roots, as the existing sandbox-playback tooling uses them.
const (
	DefaultStateRoot  = "/tmp/pvisor-sandbox-replay/state"
	DefaultOutputRoot = "/tmp/pvisor-sandbox-replay/output"
)

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Validate checks what can be checked without touching the file system.
func (r *Request) Validate() error {
	switch {
	case r.Agent == "":
		return configErr("--agent is required (one of %s)", strings.Join(agentNames(), ", "))
	case r.Trajectory == "":
		return configErr("--trajectory is required")
	case r.AfterStep < 1:
		return configErr("--after-step %d: steps are numbered from 1 (run 'pvisor inspect %s' to list them)", r.AfterStep, r.Trajectory)
	case r.MaxSteps < 0 || r.MaxSteps == 0 && r.MaxStepsSet:
		return configErr("--max-steps %d: max_steps must be positive (omit it for no limit)", r.MaxSteps)
	case r.RunID != "" && !runIDPattern.MatchString(r.RunID):
		return configErr("--run-id %q: may contain only letters, digits, '-' and '_'", r.RunID)
	case strings.ContainsAny(r.SessionID, "\x00\r\n"):
		return configErr("--session-id must contain no NUL, CR or LF")
	case r.Run.TimeoutMS < 0:
		return configErr("--timeout-ms %d: must be positive (or 0 for no limit)", r.Run.TimeoutMS)
	}
	if err := r.checkBoundaryPrompt(); err != nil {
		return err
	}
	if err := r.checkVerify(); err != nil {
		return err
	}
	// Accepted for compatibility with existing configs, but not built yet:
	// refusing beats silently running without them.
	switch {
	case r.Overlaynet.Mode != "" && r.Overlaynet.Mode != "off" && r.Overlaynet.Mode != "deny":
		return configErr("[overlaynet] mode %q is not supported; use \"off\" (tools share the host network) or \"deny\" (tools see only their own loopback)", r.Overlaynet.Mode)
	case r.Overlaynet.Policy != "":
		return configErr("[overlaynet] policy is not supported yet (no allowlist proxy); remove it, and use mode = \"deny\" or \"off\"")
	case r.Overlaynet.Mode == "deny" && os.Geteuid() != 0:
		return configErr("[overlaynet] mode = \"deny\" needs root: tools get a network namespace of their own; run as root or use mode = \"off\"")
	}
	if r.Upstream != "" && r.Upstream != UpstreamRecorded {
		if _, err := bridge.ParseProtocol(r.Upstream); err != nil {
			return configErr("--upstream: %v, or %s", err, UpstreamRecorded)
		}
	}
	if err := r.Endpoint.Check(r.Upstream); err != nil {
		return err
	}
	if r.AgentEntrypoint != "" && r.AgentRuntime != "" {
		return configErr("agent entrypoint and agent runtime are mutually exclusive")
	}
	if err := r.checkDisallowedTools(); err != nil {
		return err
	}
	if r.Instance != "" && r.Agent != "openhands" {
		return configErr("--instance selects an instance of an OpenHands output.jsonl; %s sessions hold one session per file", r.Agent)
	}
	if _, ok := lookupFormat(r.Agent); !ok {
		return configErr("unknown agent %q (supported: %s)%s", r.Agent, strings.Join(agentNames(), ", "), agents.DidYouMean(r.Agent))
	}
	switch r.Overlay.Commit {
	case "", "manual", "apply", "drop":
	default:
		return configErr("overlayfs commit %q: must be manual, apply or drop", r.Overlay.Commit)
	}
	if r.Overlay.Path == "" && (r.Overlay.Commit != "" || len(r.Overlay.Compose) > 0) {
		return configErr("overlayfs commit/compose need an overlayfs path (--overlayfs-path)")
	}
	return nil
}

// Failure is an error with its result category.
type Failure struct {
	Category string
	Message  string
}

func (f *Failure) Error() string { return f.Message }

func fail(category, format string, args ...any) *Failure {
	return &Failure{Category: category, Message: fmt.Sprintf(format, args...)}
}

var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// checkDisallowedTools validates --agent-disallowed-tool as pVisor does:
// claude-code only, names of letters, digits, '_' and '-', no duplicates.
func (r *Request) checkDisallowedTools() error {
	if len(r.DisallowedTools) == 0 {
		return nil
	}
	if r.Agent != "claude-code" {
		return configErr("--agent-disallowed-tool: disallowed_tools is supported only for claude-code")
	}
	seen := map[string]bool{}
	for _, t := range r.DisallowedTools {
		if !toolNamePattern.MatchString(t) {
			return configErr("--agent-disallowed-tool: invalid disallowed tool name %q", t)
		}
		if seen[t] {
			return configErr("--agent-disallowed-tool: duplicate disallowed tool %q", t)
		}
		seen[t] = true
	}
	return nil
}
