package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// A Launcher continues one agent natively: it stages the rebuilt session in an
// isolated home, says how to launch the real CLI against the bridge, and
// cleans the session the CLI wrote. Everything else about a continuation
// (version probe, bridge, upstream, process supervision, step budget,
// comparison, result) is the engine's. Adding an agent's continuation is one
// launch_<agent>.go file with a Launcher registered in launchers, and its
// envelope in bridge/envelope.
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
// trajectory their CLI's tested versions can: it refuses (a *Failure) before
// the prefix is replayed, so nothing runs.
type TrajectoryChecker interface {
	CheckTrajectory(t *trajectory.Trajectory, version string, req *Request) error
}

// TextActioner is implemented by launchers whose agent may parse its actions
// from the reply text and send no tools (mini-swe-agent 1.x): the recorded
// upstream then plays its replies to tool-less requests too.
type TextActioner interface {
	TextActions(c *Continuation) bool
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

// StopSignaler is implemented by a Staged whose CLI needs another signal
// than SIGTERM to stop cleanly (OpenCode flushes its session on SIGINT), and
// a longer grace period before it is killed.
type StopSignaler interface {
	StopSignal() (syscall.Signal, time.Duration)
}

// Continuation is what a launcher is given.
type Continuation struct {
	Plan      *Plan
	AfterStep int
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

// launchers are the agents whose continuation this build supports; a
// variable so engine tests can add one.
var launchers = map[string]Launcher{
	"codex":          codexLauncher{},
	"claude-code":    claudeLauncher{},
	"opencode":       opencodeLauncher{},
	"pi":             piLauncher{},
	"mini-swe-agent": miniLauncher{},
	"openhands":      openhandsLauncher{},
}

// Entrypoint resolves an agent CLI as a replay does: the explicit path
// (--agent-entrypoint), or binary on the PATH value path. It returns the
// absolute path and the launch source.
func Entrypoint(explicit, binary, path string) (string, string, error) {
	if explicit != "" {
		abs, err := filepath.Abs(explicit)
		if err != nil {
			return "", "", configErr("--agent-entrypoint %s: %v", explicit, err)
		}
		st, err := os.Stat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", "", configErr("--agent-entrypoint %s does not exist", abs)
		case err != nil:
			return "", "", configErr("--agent-entrypoint %s: %v", abs, err)
		case st.IsDir() || st.Mode()&0o111 == 0:
			return "", "", configErr("--agent-entrypoint %s is not an executable file", abs)
		}
		return abs, result.LaunchExplicit, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would depend on the cwd
		}
		p := filepath.Join(dir, binary)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, result.LaunchPath, nil
		}
	}
	return "", "", fail(result.ConfigurationError, "%s not found on PATH; install it (testdata/e2e/install-clis.sh installs the tested releases into .e2e/; 'pvisor doctor' checks what is installed) or pass --agent-entrypoint PATH", binary)
}

// checkVersion applies the tested range: outside it the run is refused unless
// allowed, and then degraded.
func (r *run) checkVersion(l Launcher, version, printed string) error {
	check, degraded, err := versionVerdict(l, r.req.Agent, version, printed, r.req.AllowUntestedVersion)
	if check != nil {
		r.res.Metadata["agent_version_check"] = check
	}
	for _, d := range degraded {
		r.degrade(d)
	}
	return err
}

// versionVerdict checks what the CLI printed for --version against its
// launcher's shape and the tested range: the agent_version_check metadata
// (nil when the version could not be compared), and either a refusal or,
// with allowUntested, why the run is degraded.
func versionVerdict(l Launcher, agent, version, printed string, allowUntested bool) (check map[string]any, degraded []string, err error) {
	rng := tested.RangeOf(agent)
	recognised := l.VersionShape().MatchString(printed)
	if !recognised {
		msg := fmt.Sprintf("%s --version printed %q, not the way %s prints its version", l.Binary(), firstLine(printed), agent)
		if !allowUntested {
			return nil, nil, fail(result.UnsupportedVersion, "%s: is --agent-entrypoint really %s? (a release that changed its output needs --allow-untested-version; quality becomes degraded)", msg, agent)
		}
		degraded = append(degraded, msg)
	}
	ok, err := rng.Contains(version)
	if err != nil {
		return nil, degraded, fail(result.UnsupportedVersion, "%s version %q cannot be compared with the tested range %s: %v", l.Binary(), version, rng, err)
	}
	check = map[string]any{"tested_range": rng.String(), "version": version, "in_range": ok,
		"version_output_recognised": recognised}
	if ok {
		return check, degraded, nil
	}
	if !allowUntested {
		return check, nil, fail(result.UnsupportedVersion, "%s %s is outside the tested range %s; install a tested version, or pass --allow-untested-version (quality becomes degraded)",
			l.Binary(), version, rng)
	}
	return check, append(degraded, fmt.Sprintf("%s %s is outside the tested range %s", l.Binary(), version, rng)), nil
}

// degrade marks the run degraded and says why.
func (r *run) degrade(reason string) {
	r.degraded = append(r.degraded, reason)
	r.res.Metadata["quality_reasons"] = r.degraded
}

// baseEnv is the environment the agent CLI gets before its launcher adds its
// own: the tools' environment (no credentials inherited) without anything
// that could point it at a model or a proxy other than the bridge.
func (r *run) baseEnv() []string {
	var env []string
	for _, kv := range r.toolEnv() {
		name, _, _ := strings.Cut(kv, "=")
		if !redirectsTraffic(name) {
			env = append(env, kv)
		}
	}
	env = append(env, "NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1")
	return withPathFirst(env, r.cliPath)
}

// redirectsTraffic: provider endpoints (OPENAI_BASE_URL, ANTHROPIC_BASE_URL,
// OPENAI_API_BASE, …) and proxies.
func redirectsTraffic(name string) bool {
	up := strings.ToUpper(name)
	switch up {
	case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
		return true
	}
	return strings.HasSuffix(up, "_BASE_URL") || strings.HasSuffix(up, "_API_BASE")
}

func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
