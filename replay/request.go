package replay

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/progress"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/replay/toolenv"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
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
	// TrajectoryAssets is a directory of files the trajectory names outside
	// the session (SWE-agent's problem statement from a file), inlined into
	// the prepared prefix from there, read-only (pVisor's
	// --trajectory-assets).
	TrajectoryAssets string `json:",omitempty"`
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
	// DisallowedTools are tools the continued agent may not use (its
	// launcher's launch.ToolDenier), as pVisor's agent.disallowed_tools.
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
	// UpstreamFirstByteTimeout and UpstreamIdleTimeout bound a model
	// upstream's wait for response headers and each silence of its stream
	// (0: bridge.DefaultFirstByteTimeout, bridge.DefaultIdleTimeout).
	UpstreamFirstByteTimeout time.Duration `json:",omitempty"`
	UpstreamIdleTimeout      time.Duration `json:",omitempty"`
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
	// Executor, Policy and Safe are pVisor's names: host and observe are
	// what pvisor does; the rest is refused (runopts.go).
	Executor string `json:",omitempty"`
	Policy   string `json:",omitempty"`
	Safe     bool   `json:",omitempty"`
	// Rootfs or Image is the container's root under executor container
	// (--container-rootfs, --container-image; TOML rootfs, image).
	Rootfs string `json:",omitempty"`
	Image  string `json:",omitempty"`
}

// OverlayConfig is the [overlayfs] table.
type OverlayConfig struct {
	Path    string
	Compose []string
	Commit  string
}

// OverlaynetConfig is [overlaynet]: how replayed tools reach the network.
type OverlaynetConfig = toolenv.Overlaynet

// Default roots, as the existing sandbox-playback tooling uses them.
const (
	DefaultStateRoot  = "/tmp/pvisor-sandbox-replay/state"
	DefaultOutputRoot = "/tmp/pvisor-sandbox-replay/output"
)

var runIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// ValidRunID reports whether id may name a run's directories: letters,
// digits, '_' and '-'.
func ValidRunID(id string) bool { return runIDPattern().MatchString(id) }

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
	case r.RunID != "" && !runIDPattern().MatchString(r.RunID):
		return configErr("--run-id %q: may contain only letters, digits, '-' and '_'", r.RunID)
	case strings.ContainsAny(r.SessionID, "\x00\r\n"):
		return configErr("--session-id must contain no NUL, CR or LF")
	case r.Run.TimeoutMS < 0:
		return configErr("--timeout-ms %d: must be positive (or 0 for no limit)", r.Run.TimeoutMS)
	}
	if err := r.checkBoundaryPrompt(); err != nil {
		return err
	}
	if err := r.applySafe(); err != nil {
		return err
	}
	for _, p := range []*string{&r.Run.Rootfs, &r.Run.Image} {
		// The overlay worker runs elsewhere; the directory must not move.
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
	if err := toolenv.CheckRunOptions(r.Run.Executor, r.Run.Policy, toolenv.ContainerConfig{Rootfs: r.Run.Rootfs, Image: r.Run.Image}); err != nil {
		return err
	}
	if err := r.Overlaynet.Check(); err != nil {
		return err
	}
	if err := r.checkVerify(); err != nil {
		return err
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
	if err := r.checkAssets(); err != nil {
		return err
	}
	if f, ok := lookupFormat(r.Agent); ok && r.Instance != "" {
		if _, multi := f.(trajectory.MultiSession); !multi {
			return configErr("--instance selects an instance of a file holding several sessions (an OpenHands output.jsonl, for %s); %s sessions hold one session per file",
				strings.Join(multiSessionAgents(), ", "), r.Agent)
		}
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
type Failure = result.Failure

func fail(category, format string, args ...any) *Failure {
	return result.Fail(category, format, args...)
}

var toolNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// checkDisallowedTools validates --agent-disallowed-tool as pVisor does:
// agents whose launcher can deny tools only (claude-code), names of
// letters, digits, '_' and '-', no duplicates.
func (r *Request) checkDisallowedTools() error {
	if len(r.DisallowedTools) == 0 {
		return nil
	}
	if _, ok := toolDenier(r.Agent); !ok {
		var deniers []string
		for _, a := range agents.Names() {
			if _, ok := toolDenier(a); ok {
				deniers = append(deniers, a)
			}
		}
		return configErr("--agent-disallowed-tool: disallowed_tools is supported only for %s", strings.Join(deniers, ", "))
	}
	return checkToolNames(r.DisallowedTools)
}

// checkToolNames: names of letters, digits, '_' and '-', no duplicates.
func checkToolNames(tools []string) error {
	seen := map[string]bool{}
	for _, t := range tools {
		if !toolNamePattern().MatchString(t) {
			return configErr("--agent-disallowed-tool: invalid disallowed tool name %q", t)
		}
		if seen[t] {
			return configErr("--agent-disallowed-tool: duplicate disallowed tool %q", t)
		}
		seen[t] = true
	}
	return nil
}

// toolDenier is agent's launcher when its CLI can be denied tools.
func toolDenier(agent string) (launch.ToolDenier, bool) {
	l, _ := launcherOf(agent)
	d, ok := l.(launch.ToolDenier)
	return d, ok
}

// multiSessionAgents names the agents whose files may hold several
// sessions.
func multiSessionAgents() []string {
	var out []string
	for _, f := range agents.All() {
		if _, ok := f.(trajectory.MultiSession); ok {
			out = append(out, f.Agent())
		}
	}
	return out
}

// Progress modes (Request.Progress): progress's. The engine reports on
// stderr, so stdout stays the one result line.
const (
	ProgressOff   = progress.Off
	ProgressLines = progress.Lines
	ProgressLive  = progress.Live
)

// ProgressMode is the mode for stderr f: live on a terminal, lines
// elsewhere, off when quiet.
func ProgressMode(f *os.File, quiet bool) string { return progress.Mode(f, quiet) }
