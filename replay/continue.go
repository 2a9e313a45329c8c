package replay

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/replay/agentcli"
	"github.com/pvisor/pvisor/replay/agentproc"
	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/result"
)

// DefaultIdleTimeout stops a continued agent that neither writes output nor
// exchanges a byte with the model for this long.
const DefaultIdleTimeout = 10 * time.Minute

// promptPosition is where the boundary prompt goes: right after O′N, where
// the transport nonce sat.
const promptPosition = "after_boundary_observation"

// contState is what prepareContinue settled before any tool ran.
type contState struct {
	launcher Launcher
	c        *Continuation
	upstream bridge.Upstream
	upMeta   map[string]any
	budget   int // live model turns allowed; 0 = no limit
}

// prepareContinue resolves everything the continuation needs that can refuse
// it — the launcher, the CLI and its version, the upstream — so a run that
// cannot continue fails before the prefix changes the workspace.
func (r *run) prepareContinue(ctx context.Context) error {
	agent := r.plan.Format.Agent()
	l, ok := launcherOf(agent)
	if !ok {
		return fail(result.UnsupportedAgent, "continuing %s is not supported yet; use --replay-only to replay the prefix and rebuild its session", agent)
	}
	env := r.baseEnv()
	explicit, declared := r.req.AgentEntrypoint, ""
	if r.req.AgentRuntime != "" {
		var err error
		if explicit, declared, err = agentcli.Runtime(r.req.AgentRuntime, agent); err != nil {
			return err
		}
	}
	entry, source, err := agentcli.Entrypoint(explicit, l.Binary(), envValue(env, "PATH"))
	if err != nil {
		return err
	}
	if declared != "" {
		source = result.LaunchRuntime
	}
	r.res.Agent.Entrypoint, r.res.Agent.LaunchSource = &entry, source
	cliPath, cliMeta, err := agentcli.CheckCLI(ctx, agent, entry, env)
	if cliMeta != nil {
		r.res.Metadata["agent_cli"] = cliMeta
	}
	if err != nil {
		return err
	}
	r.cliPath = cliPath
	env = r.baseEnv()
	if v := r.plan.Trajectory.Version; v != "" {
		r.res.Metadata["trajectory_agent_version"] = v
	}
	probeEnv, err := agentcli.IsolatedHome(env, filepath.Join(r.stateDir, "version-probe"))
	if err != nil {
		return fail(result.WorkspaceError, "version probe home: %v", err)
	}
	// A VersionCommander asks its package, which can change without the
	// interpreter that runs the command changing: it is not cached.
	var version, printed string
	var cached bool
	if vc, ok := l.(VersionCommander); ok {
		var argv []string
		if argv, err = vc.VersionCommand(entry); err == nil {
			version, printed, err = agentcli.ProbeVersionWith(ctx, argv, probeEnv)
		}
	} else {
		version, printed, cached, err = agentcli.CachedVersion(ctx, filepath.Dir(r.stateDir), entry, probeEnv)
	}
	if err != nil {
		return fail(result.UnsupportedVersion, "%v; check --agent-entrypoint", err)
	}
	r.res.Metadata["agent_version_cached"] = cached
	r.res.Agent.Version = &version
	if declared != "" && declared != version {
		return fail(result.UnsupportedVersion, "--agent-runtime declares %s %s, but %s reports %s", agent, declared, entry, version)
	}
	if err := r.checkVersion(l, version, printed); err != nil {
		return err
	}
	if tc, ok := l.(launch.TrajectoryChecker); ok {
		check := launch.Check{Source: r.req.Trajectory, AfterStep: r.req.AfterStep, BoundaryUserPrompt: r.req.BoundaryUserPrompt}
		if err := tc.CheckTrajectory(r.plan.Trajectory, version, check); err != nil {
			return err
		}
	}
	ws, err := r.workspace()
	if err != nil {
		return err
	}
	args := continuationArgs(r.req, l)
	c := &Continuation{Trajectory: r.plan.Trajectory, AfterStep: r.req.AfterStep, Source: r.req.Trajectory, Workspace: ws,
		Paths: relocate.Paths{From: r.plan.Trajectory.Cwd, To: ws}, Version: version, AgentArgs: args,
		Entrypoint: entry, Env: env, StateRoot: filepath.Dir(r.stateDir)}
	up, meta, err := r.upstream(l, c)
	if err != nil {
		return err
	}
	if r.req.DisableThinking {
		r.res.Metadata["disable_thinking"] = meta["disable_thinking"]
	}
	cs := &contState{launcher: l, c: c, upstream: up, upMeta: meta}
	if r.req.MaxSteps > 0 {
		cs.budget = r.req.MaxSteps - r.res.PrefixModelTurns // checkBudget made it positive
	}
	r.cont = cs
	return nil
}

// continuationArgs are the native arguments the request adds to the CLI
// of l: --agent-arg values, then how l denies the --agent-disallowed-tool
// tools (the request was refused for a launcher that cannot).
func continuationArgs(req *Request, l Launcher) []string {
	args := slices.Clone(req.AgentArgs)
	if d, ok := l.(launch.ToolDenier); ok && len(req.DisallowedTools) > 0 {
		args = append(args, d.DenyTools(req.DisallowedTools)...)
	}
	return args
}

// continuation is one run of the agent CLI and what it left.
type continuation struct {
	stop    agentproc.StopReason
	code    int
	signal  string
	waitErr error
	took    time.Duration
	report  envelope.Report
	stats   bridge.Stats
	refusal *bridge.Refusal
	coll    *Collected
	collErr error
}

// continueAgent resumes the rebuilt session with the real CLI through the
// bridge and reports what it did.
func (r *run) continueAgent(ctx context.Context) error {
	cs, agent := r.cont, r.plan.Format.Agent()
	c := cs.c
	c.Rebuilt = r.rebuilt
	c.Home = filepath.Join(r.stateDir, agent+"-home")
	if err := os.RemoveAll(c.Home); err != nil {
		return fail(result.WorkspaceError, "agent home: %v", err)
	}
	if err := os.MkdirAll(c.Home, 0o700); err != nil {
		return fail(result.WorkspaceError, "agent home: %v", err)
	}
	budget := make(chan struct{})
	var budgetOnce sync.Once
	c.Envelope = envelope.Options{Nonce: envelope.NewNonce(), Prompt: r.req.BoundaryUserPrompt, MaxLiveTurns: cs.budget,
		OnBudget: func() { budgetOnce.Do(func() { close(budget) }) }}
	staged, err := cs.launcher.Stage(c)
	if err != nil {
		return fail(result.ContinuationError, "staging the rebuilt %s session: %v", agent, err)
	}
	ct, err := r.runAgent(ctx, staged, budget)
	if err != nil {
		return err
	}
	return r.finishContinuation(ct)
}

// runAgent starts the bridge and the CLI and supervises it. It runs the CLI
// from the calling goroutine (see startAgent).
func (r *run) runAgent(ctx context.Context, staged Staged, budget <-chan struct{}) (*continuation, error) {
	cs, agent := r.cont, r.plan.Format.Agent()
	logDir := filepath.Join(r.outputDir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, fail(result.WorkspaceError, "logs: %v", err)
	}
	logs := map[string]*os.File{}
	for _, name := range []string{"bridge.log", agent + "-stdout.log", agent + "-stderr.log"} {
		f, err := agentproc.OpenLog(filepath.Join(logDir, name))
		if err != nil {
			return nil, fail(result.WorkspaceError, "%v", err)
		}
		defer f.Close()
		logs[name] = f
	}
	activity := &atomic.Int64{}
	conv := staged.Conversation()
	srv, err := bridge.Start(bridge.Options{Upstream: activeUpstream{cs.upstream, activity}, Conversation: r.progress.Conversation(conv),
		Logger: slog.New(slog.NewJSONHandler(logs["bridge.log"], nil))})
	if err != nil {
		return nil, fail(result.ContinuationError, "%v", err)
	}
	defer srv.Close()
	cmd, err := staged.Command(BridgeAddr{URL: srv.URL(), Token: srv.Token()})
	if err != nil {
		return nil, fail(result.ContinuationError, "configuring %s: %v", agent, err)
	}
	// The CLI's temp files (Claude's /tmp/claude-<uid>, Bun's extracted
	// .so files) go to the state dir, not the machine's /tmp; a launcher's
	// own TMPDIR still wins.
	tmp := filepath.Join(r.stateDir, "agent-tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fail(result.WorkspaceError, "agent temp dir: %v", err)
	}
	env := append(append(r.baseEnv(), "TMPDIR="+tmp, "BUN_TMPDIR="+tmp), cmd.Env...)
	if err := r.journal.Append(result.EventContinuationStarted, map[string]any{
		"agent": agent, "version": *r.res.Agent.Version, "entrypoint": *r.res.Agent.Entrypoint,
		"upstream": cs.upMeta["kind"], "max_live_steps": cs.budget,
		"boundary_user_prompt_requested": r.promptRequested(),
	}); err != nil {
		return nil, journalErr(err)
	}
	idle := r.req.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	start := time.Now()
	exe := *r.res.Agent.Entrypoint
	if p, ok := staged.(Programmer); ok {
		exe = p.Program()
	}
	// --overlaynet-agent: the CLI is born in a namespace of its own.
	inNS := func(start func() error) error { return start() }
	if r.req.Overlaynet.Agent {
		ns, extra, err := r.agentNamespace(srv)
		if err != nil {
			return nil, err
		}
		defer ns.Close()
		env, inNS = append(env, extra...), ns.Do
	}
	if h := r.req.Hooks; h != nil && h.Launch != nil {
		h.Launch(Launch{Entry: exe, Args: cmd.Args, Env: env, Dir: cs.c.Workspace, Home: cs.c.Home, Temp: tmp,
			Stdin: cmd.Stdin, Bridge: srv.URL()})
	}
	var proc *agentproc.Proc
	err = inNS(func() (err error) {
		proc, err = agentproc.Start(agentproc.Spec{Entry: exe, Args: cmd.Args, Env: env, Dir: cs.c.Workspace,
			Stdin: cmd.Stdin, Stdout: logs[agent+"-stdout.log"], Stderr: logs[agent+"-stderr.log"]}, activity)
		return err
	})
	if err != nil {
		return nil, fail(result.ContinuationError, "starting %s: %v", *r.res.Agent.Entrypoint, err)
	}
	ct := &continuation{}
	w := agentproc.Watch{Refused: srv.Refused(), Budget: budget, Idle: idle, Activity: activity}
	if ss, ok := staged.(StopSignaler); ok {
		w.Signal, w.Grace = ss.StopSignal()
	}
	ct.stop = proc.Supervise(ctx, w)
	ct.code, ct.signal, ct.waitErr = proc.Wait()
	ct.took = time.Since(start)
	srv.Close() // every record complete before the stats are read
	ct.report, ct.stats, ct.refusal = conv.Report(), srv.Stats(), srv.Refusal()
	ct.coll, ct.collErr = staged.Collect()
	return ct, nil
}
