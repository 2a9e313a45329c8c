package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/replay/toolenv"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/agents"
)

const replayUsage = `Usage:
    pvisor replay --agent A --trajectory FILE --after-step N [flags]
    pvisor replay --config FILE
    pvisor replay --request FILE     (sandbox-playback.request/v1 JSON)

Re-runs the tool calls of steps 1..N of a native session in this sandbox,
rebuilds the agent's own session with the fresh observations and lets the
real agent continue. The result (sandbox-playback.result/v3) is printed as
one JSON line and saved as <output-dir>/<run-id>/result.json.

Modes:
    (default)        replay the prefix, then continue the agent
    --replay-only    stop before the agent's first model request
    --prepare-only   parse, validate and plan; run nothing

Examples:
    $ pvisor replay --prepare-only --agent claude-code --trajectory s.jsonl --after-step 2
    $ pvisor replay --agent codex --trajectory rollout.jsonl --after-step 3 --upstream recorded
    $ pvisor replay --config experiment.toml

Continuing: the agent CLI (--agent-entrypoint, or found on PATH) resumes its
rebuilt session through a loopback bridge that checks every model request
against it. --upstream recorded plays the trajectory's own next actions (no
model service); otherwise the bridge forwards to the agent's own protocol,
configured from the provider's usual variables: OPENAI_API_KEY and
OPENAI_BASE_URL, or ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN and
ANTHROPIC_BASE_URL. Keys stay with pvisor; the agent never sees them.
--upstream openai-chat with claude-code translates Messages to Chat
Completions for OpenAI-compatible servers (name the served model with
--upstream-model).

Boundary prompt: --boundary-user-prompt TEXT is used as written;
--boundary-user-prompt-file FILE fills {{KEY}} from --prompt-arg KEY=VALUE
and the built-ins SESSION_ID, AGENT, WORKSPACE, SOURCE_BRANCH and
TARGET_BRANCH (git), then replaces each ` + "!`command`" + ` with what it prints, run
in the workspace like a replayed tool, all at once, just before the agent
starts. A missing value is exit 2, a failing command exit 30. Only the
prompt's length and sha256 and the commands' exit codes are recorded.

Egress policy (as root): --overlaynet proxy puts each replayed tool in a
network namespace whose only way out is pvisor's HTTP/HTTPS CONNECT proxy
(HTTP_PROXY/HTTPS_PROXY point at 127.0.0.1:3128 inside it), which applies
--overlaynet-policy: public (public addresses only; the host's own and
private ones are denied), deny (everything), or allowlist (only
--overlaynet-allow host[:port], *.suffix, IP or CIDR entries). Every
connection attempt is journaled (host, port, bytes each way, allowed or
denied, which call) in metadata.overlaynet and logs/egress.jsonl; never a
header, path or body. --overlaynet auto is proxy where namespaces can be
made; --overlaynet off (default) shares the host network; deny gives tools
only their own loopback. --overlaynet-agent puts the continued agent CLI
in such a namespace too: it reaches the bridge at its usual address and,
with proxy, its own tools go through the same proxy, journaled with label
agent (with deny it reaches only the bridge).
    $ pvisor replay ... --overlaynet proxy --overlaynet-policy allowlist \
          --overlaynet-allow pypi.org:443 --overlaynet-allow '*.pythonhosted.org:443'
    $ pvisor replay ... --overlaynet proxy --overlaynet-policy deny --overlaynet-agent

Container (as root): --executor container runs the replayed tools in a
root file system, --container-rootfs DIR or an OCI image layout
--container-image DIR (unpacked per run into the state dir), entered by
pvisor's own tool init (namespaces, an overlay of the root whose writes
stay in the state dir, the workspace bound at its own path, pivot_root; no
daemon). pvisor's file tools resolve paths outside the workspace in it.
    $ pvisor replay ... --executor container --container-rootfs /srv/debian-12

Exit codes: 0 ok, 2 configuration, 10 trajectory, 11 unsupported agent or
version, 20 workspace, 30 executor (a replayed tool or a prompt command),
31 ambiguous execution, 40 continuation or model, 50 internal.

Flags:
`

func cmdReplay(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-V" || args[0] == "--version") {
		// pVisor's replay executable answers its own -V.
		fmt.Fprintln(stdout, "pvisor", version)
		return 0
	}
	var summary summaryMode
	req, err := parseReplayArgs(args, stdout, &summary)
	if err == pflag.ErrHelp {
		return 0
	}
	var res *result.Result
	if err != nil {
		res = result.New(req.RunID, req.Agent)
		cat := result.ConfigurationError
		if isUnsupportedAgent(err) {
			cat = result.UnsupportedAgent
		}
		res.Fail(cat, err.Error())
		res.MarkEarly()
		res.StateDir, res.OutputDir = replay.LocationHints(req)
	} else {
		if req.Progress == progressAuto {
			req.Progress = replay.ProgressLines
			if f, ok := stderr.(*os.File); ok {
				req.Progress = replay.ProgressMode(f, false)
			}
		}
		req.ProgressTo = stderr
		ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
		res = replay.Run(ctx, req)
		stop()
	}
	stdout.Write(res.Line())
	if res.Failure != nil {
		fmt.Fprintf(stderr, "pvisor replay: %s: %s\n", res.Failure.Category, res.Failure.Message)
	}
	if summary.show(stderr) {
		printSummary(stderr, res)
	}
	return result.ExitCode(res.Failure)
}

// summaryMode says whether cmdReplay ends with a human summary on stderr:
// on a terminal unless --quiet, always with --summary.
type summaryMode struct{ forced, quiet bool }

func (m summaryMode) show(stderr io.Writer) bool {
	if m.forced {
		return true
	}
	f, ok := stderr.(*os.File)
	return ok && !m.quiet && replay.ProgressMode(f, false) == replay.ProgressLive
}

// progressAuto is a request's progress mode until cmdReplay knows where
// stderr goes.
const progressAuto = "auto"

// stopSignals end a replay the same way: the run stops, cleans up (no
// mount, no process left) and still prints its result line. A closed
// terminal (SIGHUP) or Ctrl-\\ (SIGQUIT) must not leave a half-run behind.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// cmdReplayChild is the overlay worker: the same replay, inside the merged view.
func cmdReplayChild(stdout, stderr io.Writer) int {
	req, err := replay.ChildRequest()
	if err != nil {
		fmt.Fprintf(stderr, "pvisor: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	res := replay.Run(ctx, req)
	stdout.Write(res.Line())
	return result.ExitCode(res.Failure)
}

// parseReplayArgs turns flags, or a --config file, into a request. On an
// error the request still carries whatever was parsed, for the result.
// --help prints to stdout.
func parseReplayArgs(args []string, stdout io.Writer, summary *summaryMode) (*replay.Request, error) {
	req := &replay.Request{}
	fs := pflag.NewFlagSet("replay", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var prepareOnly, replayOnly bool
	config := fs.String("config", "", "read the request from a TOML `file` ([replay], [run], [overlayfs], [overlaynet])")
	request := fs.String("request", "", "read the request from a sandbox-playback.request/v1 JSON `file`")
	fs.StringVar(&req.Agent, "agent", "", "agent that wrote the trajectory: "+strings.Join(agents.Names(), ", "))
	fs.StringVar(&req.Trajectory, "trajectory", "", "native session `file`")
	fs.StringVar(&req.Instance, "instance", "", "instance `id` to replay from an OpenHands output.jsonl holding several ('pvisor inspect' lists them)")
	decimalVar(fs, &req.AfterStep, "after-step", 0, "replay steps 1..`N` (see 'pvisor inspect')")
	decimalVar(fs, &req.MaxSteps, "max-steps", 0, "total action budget including the replayed prefix, > 0 (default: no limit)")
	fs.BoolVar(&prepareOnly, "prepare-only", false, "parse, validate and plan; run no tool and no agent")
	fs.BoolVar(&replayOnly, "replay-only", false, "stop before the agent's first model request")
	fs.BoolVar(&req.AllowStaleObservations, "allow-stale-observations", false, "reuse recorded observations of tools the replay cannot run (quality becomes degraded)")
	fs.StringVar(&req.BoundaryUserPrompt, "boundary-user-prompt", "", "user `text` appended after the boundary observation (only its length and sha256 are recorded)")
	fs.StringVar(&req.BoundaryUserPromptFile, "boundary-user-prompt-file", "", "boundary prompt from a `file` with {{KEY}} placeholders and command expansions (see Boundary prompt above)")
	promptArgs := fs.StringArray("prompt-arg", nil, "fill the {{KEY}} placeholders of --boundary-user-prompt-file: `KEY=VALUE` (repeatable)")
	fs.StringVar(&req.RunID, "run-id", "", "run `id` ([A-Za-z0-9_-]+; default replay-<uuid>)")
	fs.StringVar(&req.SessionID, "session-id", "", "model-router session `key` sent upstream as X-LiteLLM-Session-ID (default: the run id)")
	fs.StringVar(&req.Workspace, "workspace", "", "`dir` the tools run in (default: current directory)")
	fs.StringVar(&req.StateRoot, "state-dir", "", "root `dir` of per-run state (default "+replay.DefaultStateRoot+")")
	fs.StringVar(&req.OutputRoot, "output-dir", "", "root `dir` of per-run outputs (default "+replay.DefaultOutputRoot+")")
	fs.StringVar(&req.AgentEntrypoint, "agent-entrypoint", "", "agent CLI `path` (default: found on PATH)")
	fs.StringVar(&req.AgentRuntime, "agent-runtime", "", "agent runtime `dir` holding sandbox-playback-agent.json (instead of --agent-entrypoint)")
	fs.StringArrayVar(&req.AgentArgs, "agent-arg", nil, "extra native `argument` for the agent CLI (repeatable)")
	fs.StringArrayVar(&req.DisallowedTools, "agent-disallowed-tool", nil, "claude-code `tool` the continued agent may not use (repeatable; passed as --disallowedTools)")
	fs.BoolVar(&req.AllowUntestedVersion, "allow-untested-version", false, "run an agent version outside the tested range (quality becomes degraded)")
	fs.BoolVar(&req.DisableThinking, "disable-thinking", false, "turn the model's thinking off, as pVisor maps it per agent and upstream (see README)")
	fs.StringVar(&req.Upstream, "upstream", "", "model upstream: recorded, openai-responses, anthropic or openai-chat (default: the agent's own protocol)")
	fs.StringVar(&req.UpstreamModel, "upstream-model", "", "`model` an openai-chat upstream serves, when continuing claude-code on it (default $OPENAI_MODEL)")
	upstreamTimeoutVars(fs, &req.UpstreamFirstByteTimeout, &req.UpstreamIdleTimeout)
	decimalVar(fs, &req.Run.TimeoutMS, "timeout-ms", 0, "kill any replayed tool call still running after `ms` (the run is then ambiguous); 0 means only the agent's own timeouts")
	fs.StringVar(&req.TrajectoryAssets, "trajectory-assets", "", "`dir` of the files a trajectory names outside the session, inlined into the prepared prefix (SWE-agent's problem statement from a file; read-only)")
	fs.StringVar(&req.Run.Executor, "executor", "", "where tools run: `host` (the default) or container (in --container-rootfs or --container-image, entered with pvisor's own namespaces and pivot_root; needs root); vm is refused: not built")
	fs.StringVar(&req.Run.Rootfs, "container-rootfs", "", "--executor container: the root file system `dir` tools run in (never written: the run writes an overlay of it in the state dir)")
	fs.StringVar(&req.Run.Image, "container-image", "", "--executor container: an OCI image layout `dir` (index.json, blobs/) unpacked per run into the state dir as the tools' root")
	fs.StringVar(&req.Run.Policy, "policy", "", "file `policy`: observe (the default: file tools' writes outside the workspace recorded) or enforce (writes outside the workspace denied: Landlock for shell tools, a resolved-path check for file tools; needs tool isolation)")
	fs.BoolVar(&req.Run.Safe, "safe", false, "pVisor's safe preset: tool isolation, --overlayfs-path WORKSPACE --overlayfs-commit drop, --overlaynet proxy with an allowlist of the model host only, --policy enforce (a contradicting option is refused; metadata.safe says what applied)")
	fs.BoolVar(&req.Run.InheritEnv, "inherit-env", false, "give tools this process's whole environment")
	fs.StringArrayVar(&req.Run.PassEnv, "pass-env", nil, "environment variable `name` passed to tools (repeatable)")
	fs.StringVar(&req.Overlay.Path, "overlayfs-path", "", "run the replay in an overlay over this workspace `dir`")
	fs.StringArrayVar(&req.Overlay.Compose, "overlayfs-compose", nil, "extra read-only lower `dir` (repeatable)")
	fs.StringVar(&req.Overlay.Commit, "overlayfs-commit", "", "what to do with overlay changes: manual, apply or drop")
	fs.StringVar(&req.Overlaynet.Mode, "overlaynet", "", "tools' network: `mode` auto, off or proxy (alone: proxy; pVisor's), or deny (only their own loopback); see Egress policy")
	fs.Lookup("overlaynet").NoOptDefVal = toolenv.NetProxy
	fs.StringVar(&req.Overlaynet.Policy, "overlaynet-policy", "", "egress proxy `policy`: public (default; public addresses, recorded), deny, or allowlist")
	fs.StringArrayVar(&req.Overlaynet.Allow, "overlaynet-allow", nil, "allowlist `pattern` host[:port], *.suffix, IP or CIDR (repeatable; needs --overlaynet-policy allowlist)")
	fs.BoolVar(&req.Overlaynet.Agent, "overlaynet-agent", false, "the continued agent CLI too: a network namespace of its own where it reaches the bridge and, with --overlaynet proxy, its tools go through the egress proxy (journaled with label agent); with deny, only the bridge")
	quiet := fs.BoolP("quiet", "q", false, "no progress lines and no summary on stderr (by default: one live line on a terminal, plain lines otherwise)")
	fs.BoolVar(&summary.forced, "summary", false, "end with a short summary for people on stderr (default: when stderr is a terminal)")
	help := fs.BoolP("help", "h", false, "show this help")

	if err := fs.Parse(optionalValue(args, "--overlaynet", overlaynetModes)); err != nil {
		return req, fmt.Errorf("%v (see 'pvisor replay --help')", flagError(fs, err))
	}
	req.Progress = progressAuto
	if *quiet {
		req.Progress = replay.ProgressOff
		summary.quiet = true
	}
	if *help {
		printHelp(stdout, replayUsage, fs)
		return req, pflag.ErrHelp
	}
	if fs.NArg() > 0 {
		return req, fmt.Errorf("unexpected argument %q (flags only; see 'pvisor replay --help')", fs.Arg(0))
	}
	if err := checkUpstreamTimeouts(fs); err != nil {
		return req, err
	}
	if req.Upstream == replay.UpstreamRecorded && (req.UpstreamFirstByteTimeout != 0 || req.UpstreamIdleTimeout != 0) {
		return req, replay.ErrRecordedTimeouts
	}
	if *config != "" && *request != "" {
		return req, fmt.Errorf("--config/--request cannot be combined with direct replay options: pass one of them")
	}
	if *config != "" || *request != "" {
		var direct []string
		fs.Visit(func(f *pflag.Flag) {
			if f.Name != "config" && f.Name != "request" && f.Name != "quiet" && f.Name != "summary" {
				direct = append(direct, "--"+f.Name)
			}
		})
		if len(direct) > 0 {
			return req, fmt.Errorf("--config/--request cannot be combined with direct replay options %v: put them in the file", direct)
		}
		load := loadReplayConfig
		if *request != "" {
			load = loadRequestFile
		}
		r, err := load(*config + *request)
		if r != nil {
			r.Progress = req.Progress
		}
		return r, err
	}
	if !fs.Changed("after-step") {
		hint := "'pvisor inspect FILE'"
		if req.Trajectory != "" {
			hint = "'pvisor inspect " + req.Trajectory + "'"
		}
		return req, fmt.Errorf("--after-step N is required: the replay re-runs steps 1..N (%s lists the steps)", hint)
	}
	req.MaxStepsSet = fs.Changed("max-steps")
	pargs, err := prompt.ParseArgs(*promptArgs)
	if err != nil {
		return req, err
	}
	req.PromptArgs = pargs
	if req.BoundaryUserPromptFile != "" {
		// Absolute, so an overlay or batch worker reads the same file.
		if req.BoundaryUserPromptFile, err = filepath.Abs(req.BoundaryUserPromptFile); err != nil {
			return req, fmt.Errorf("--boundary-user-prompt-file: %v", err)
		}
	}
	if fs.Changed("session-id") && req.SessionID == "" {
		return req, fmt.Errorf("--session-id: session_id must be non-empty and contain no NUL, CR, or LF")
	}
	if prepareOnly && replayOnly {
		return req, fmt.Errorf("--prepare-only and --replay-only are mutually exclusive")
	}
	switch {
	case prepareOnly:
		req.Mode = replay.PrepareOnly
	case replayOnly:
		req.Mode = replay.ReplayOnly
	}
	return req, nil
}
