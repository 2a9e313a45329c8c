package launch

import (
	"encoding/json"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/trajectory"
)

// A Launcher continues one agent natively: it stages the rebuilt session in an
// isolated home, says how to launch the real CLI against the bridge, and
// cleans the session the CLI wrote. Everything else about a continuation
// (version probe, bridge, upstream, process supervision, step budget,
// comparison, result) is the engine's.
type Launcher interface {
	// Binary is the CLI's executable name, looked up on PATH when
	// --agent-entrypoint is not given.
	Binary() string
	// VersionShape matches a line of what the CLI prints for --version:
	// a binary that prints anything else is not this agent (or a release
	// that changed its output, which is refused like an untested one).
	VersionShape() *regexp.Regexp
	// Protocol is the model protocol the CLI speaks to the bridge.
	Protocol() bridge.Protocol
	// Replies are the recorded actions after the boundary in the shape the
	// recorded upstream plays them (the agent's own tool-call kinds),
	// relocated to the workspace. c.Rebuilt is not set yet: this runs
	// before the prefix is replayed.
	Replies(c *Continuation) ([]fakemodel.Reply, error)
	// Stage writes the rebuilt session into c.Home and prepares the
	// envelope that checks the CLI's requests.
	Stage(c *Continuation) (Staged, error)
}

// BareVersion is the VersionShape of a CLI that prints its version alone
// on a line (1.18.33, v0.73.1), as many npm CLIs do.
var BareVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^v?\d+\.\d+\.\d+\S*$`) })

// NativeCLINamer is implemented by launchers of the agents pVisor continues
// with its generic native-CLI adapter (Codex, OpenCode): a replay's result
// then carries metadata.native_cli, the agent's name, as pVisor's does.
type NativeCLINamer interface {
	NativeCLI() string
}

// VersionCommander is implemented by launchers whose CLI does not print its
// version for --version (mini-swe-agent 1.x prints a banner): the argv that
// prints it instead. Its output must match VersionShape.
type VersionCommander interface {
	VersionCommand(entry string) ([]string, error)
}

// TrajectoryChecker is implemented by launchers that cannot continue every
// trajectory their CLI's tested versions can: it refuses (a
// *result.Failure) before the prefix is replayed, so nothing runs.
type TrajectoryChecker interface {
	CheckTrajectory(t *trajectory.Trajectory, version string, r Check) error
}

// Check is what of the request a TrajectoryChecker may look at.
type Check struct {
	Source             string // the trajectory file
	AfterStep          int
	BoundaryUserPrompt string
}

// TextActioner is implemented by launchers whose agent may parse its actions
// from the reply text and send no tools (mini-swe-agent 1.x): the recorded
// upstream then plays its replies to tool-less requests too.
type TextActioner interface {
	TextActions(c *Continuation) bool
}

// ThinkingDisabler is implemented by launchers whose agent pVisor's
// --disable-thinking maps to something, for an upstream speaking proto
// (never the recorded upstream, which has no model to tell). An error is a
// combination pVisor does not define. Agents without it get nothing.
type ThinkingDisabler interface {
	DisableThinking(proto bridge.Protocol, agentArgs []string) (ThinkingOff, error)
}

// ToolDenier is implemented by launchers whose CLI can be told not to offer
// some of its tools (pVisor's --agent-disallowed-tool, Claude Code's
// --disallowedTools): the native arguments that deny the named tools, added
// after --agent-arg's. Agents without it refuse the flag.
type ToolDenier interface {
	DenyTools(names []string) []string
}

// ThinkingOff is how --disable-thinking applies to one continuation: body
// fields the bridge adds to every forwarded request, native arguments for
// the CLI, and what to record.
type ThinkingOff struct {
	Fields map[string]json.RawMessage
	Args   []string
	Effect string
}

// Programmer is implemented by a Staged that runs another program than the
// entrypoint (mini-swe-agent's runner, run with the python of the
// entrypoint's venv); Command's Args are that program's.
type Programmer interface {
	Program() string
}

// Staged is a session ready to resume.
type Staged interface {
	// Conversation checks every model request of the run.
	Conversation() envelope.Conversation
	// Command is how to launch the CLI against the bridge at b; it may
	// write the agent's configuration into its home.
	Command(b BridgeAddr) (Command, error)
	// Collect reads the session the CLI wrote and removes every record the
	// resume envelope added. It is called after the CLI ended, also when
	// it failed.
	Collect() (*Collected, error)
}

// StopSignaler is implemented by a Staged whose CLI needs another signal
// than SIGTERM to stop cleanly (OpenCode flushes its session on SIGINT), and
// a longer grace period before it is killed.
type StopSignaler interface {
	StopSignal() (syscall.Signal, time.Duration)
}

// BridgeAddr is where the agent finds the bridge. The token belongs in the
// environment or a 0600 file, never in argv.
type BridgeAddr struct{ URL, Token string }

// Command is one CLI launch; the entrypoint is the engine's.
type Command struct {
	Args []string
	// Env is added to the engine's base environment (later entries win).
	Env []string
	// Stdin is fed to the CLI; nil means /dev/null.
	Stdin []byte
}

// Collected is the continued native session, cleaned.
type Collected struct {
	Session []byte
	// Metadata describes what was removed and anything the CLI inserted
	// (it goes into result metadata under "continuation").
	Metadata map[string]any
	// ResultMetadata goes into the result's metadata at the top level
	// (opencode_step_budget, say).
	ResultMetadata map[string]any
}

// Continuation is what a launcher is given.
type Continuation struct {
	Trajectory *trajectory.Trajectory
	AfterStep  int
	// Source is the original trajectory file; Rebuilt the reconstructed
	// session (set before Stage).
	Source  string
	Rebuilt []byte
	// Workspace is where the agent runs; Paths maps the recorded working
	// directory to it.
	Workspace string
	Paths     relocate.Paths
	// Home is an empty directory in the run's state dir for the agent's
	// isolated home (config, sessions).
	Home    string
	Version string // the CLI's version, as probed
	// Entrypoint is the CLI's absolute path and Env the environment it runs
	// with (before Command's additions), for launchers that must run the
	// CLI for staging or collecting (opencode import / export).
	Entrypoint string
	Env        []string
	// StateRoot holds what outlives a run (OpenCode's template database).
	StateRoot string
	AgentArgs []string
	Envelope  envelope.Options
}
