package replay

import (
	"bytes"
	"context"
	"fmt"
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
	"github.com/pvisor/pvisor/trajectory"
)

// DefaultIdleTimeout stops a continued agent that neither writes output nor
// exchanges a byte with the model for this long.
const DefaultIdleTimeout = 10 * time.Minute

// Journal events of the continuation.
const (
	eventContinuationStarted  = "continuation_started"
	eventContinuationFinished = "continuation_finished"
)

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
	srv, err := bridge.Start(bridge.Options{Upstream: activeUpstream{cs.upstream, activity}, Conversation: r.progress.conversation(conv),
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
	if err := r.journal.Append(eventContinuationStarted, map[string]any{
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
	if h := r.req.Hooks; h != nil && h.Launch != nil {
		h.Launch(Launch{Entry: exe, Args: cmd.Args, Env: env, Dir: cs.c.Workspace, Home: cs.c.Home, Temp: tmp,
			Stdin: cmd.Stdin, Bridge: srv.URL()})
	}
	proc, err := agentproc.Start(agentproc.Spec{Entry: exe, Args: cmd.Args, Env: env, Dir: cs.c.Workspace,
		Stdin: cmd.Stdin, Stdout: logs[agent+"-stdout.log"], Stderr: logs[agent+"-stderr.log"]}, activity)
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

// finishContinuation writes the continued session and the comparison, and
// turns what happened into the result.
func (r *run) finishContinuation(ct *continuation) error {
	cs, agent := r.cont, r.plan.Format.Agent()
	meta := map[string]any{
		"stop_reason": ct.stop.String(), "exit_code": ct.code, "duration_ms": ct.took.Milliseconds(),
		"bridge": ct.stats, "envelope": ct.report, "upstream": cs.upMeta,
	}
	if ct.signal != "" {
		meta["signal"] = ct.signal
	}
	if r.recorded != nil {
		cs.upMeta["recorded"] = r.recorded.Stats()
	}
	if cs.budget > 0 {
		meta["max_live_steps"] = cs.budget
	}
	r.res.Metadata["continuation"] = meta

	var continued *trajectory.Trajectory
	if ct.collErr != nil {
		meta["continued_session_error"] = ct.collErr.Error()
	} else {
		for k, v := range ct.coll.Metadata {
			meta[k] = v
		}
		for k, v := range ct.coll.ResultMetadata {
			r.res.Metadata[k] = v
		}
		var err error
		if continued, err = r.writeContinued(ct.coll.Session); err != nil {
			return err
		}
	}
	if continued != nil {
		r.res.ContinuedSteps = liveActions(continued, r.req.AfterStep)
		if err := r.compareNextAction(continued, ct.report.PromptInjected > 0); err != nil {
			return err
		}
	}
	r.promptMetadata(ct.report)
	n := 0
	for _, c := range ct.report.ContextInserted {
		if c.Placement != envelope.PlacedAfterFirstMessage {
			n++
		}
	}
	if n > 0 {
		r.degrade(fmt.Sprintf("%s inserted %d context item(s) before the first model request, so it did not end exactly at the boundary observation", agent, n))
	}

	status, failure := r.classify(ct)
	r.res.AgentStatus = status
	// pVisor's payload (return_code, continued_steps,
	// boundary_user_prompt_injected), then ours.
	if err := r.journal.Append(eventContinuationFinished, map[string]any{
		"return_code": ct.code, "continued_steps": r.res.ContinuedSteps,
		"boundary_user_prompt_injected": ct.report.PromptInjected > 0,
		"agent_status":                  status, "stop_reason": ct.stop.String(),
		"exit_code": ct.code, "requests_forwarded": ct.stats.Forwarded, "requests_refused": ct.stats.Refused,
	}); err != nil {
		return journalErr(err)
	}
	if failure != nil {
		return failure
	}
	r.res.SetPhase(result.PhaseContinued)
	return nil
}

// classify turns how the CLI ended into an agent status and a failure.
func (r *run) classify(ct *continuation) (string, *Failure) {
	bin := filepath.Base(*r.res.Agent.Entrypoint)
	logs := fmt.Sprintf("see logs/%s-stderr.log and logs/bridge.log", r.plan.Format.Agent())
	switch {
	case ct.stop == agentproc.StopRefused && ct.refusal != nil:
		return result.AgentFailed, fail(result.ContinuationError,
			"the bridge refused a model request and stopped %s (nothing was forwarded): %s", bin, ct.refusal.Reason)
	case ct.stop == agentproc.StopBudget:
		return result.AgentMaxSteps, nil
	case ct.stop == agentproc.StopIdle:
		return result.AgentFailed, fail(result.ContinuationError, "%s showed no activity for %s and was stopped; %s", bin, r.idle(), logs)
	case ct.stop == agentproc.StopCanceled:
		return result.AgentFailed, fail(result.ContinuationError, "the run was interrupted while %s was running", bin)
	case ct.waitErr != nil:
		return result.AgentFailed, fail(result.InternalError, "waiting for %s: %v", bin, ct.waitErr)
	case ct.report.Accepted == 0 && ct.stats.FirstUnauthorized != nil:
		return result.AgentFailed, fail(result.ContinuationError, "%s", tokenRefused(bin, ct.stats, logs))
	case ct.code != 0 || (ct.stats.LastFailure != nil && r.res.ContinuedSteps == 0):
		// Some CLIs (Pi) exit 0 when the model failed; with no live step
		// taken the run did not continue, whatever the exit status says.
		if lf := ct.stats.LastFailure; lf != nil {
			cat := map[bridge.FailureKind]string{bridge.FailureRateLimit: result.ModelRateLimit,
				bridge.FailureInternal: result.ModelInternalError, bridge.FailureConnection: result.ModelConnectionError}[lf.Kind]
			return result.AgentFailed, fail(cat, "%s failed after the model upstream answered request %d with %d (%s); retry later", bin, lf.Seq, lf.Status, lf.Kind)
		}
		how := fmt.Sprintf("status %d", ct.code)
		if ct.signal != "" {
			how = "signal " + ct.signal
		}
		return result.AgentFailed, fail(result.ContinuationError, "%s ended with %s; %s", bin, how, logs)
	case ct.report.Accepted == 0:
		return result.AgentFailed, fail(result.ContinuationError, "%s ended without sending a model request through the bridge; %s", bin, logs)
	case ct.collErr != nil:
		return result.AgentFailed, fail(result.ContinuationError, "the continued session: %v", ct.collErr)
	}
	return result.AgentCompleted, nil
}

// tokenRefused says that the CLI did reach the bridge, but without the
// per-run token it was configured with, so no model request was accepted.
func tokenRefused(bin string, st bridge.Stats, logs string) string {
	u := st.FirstUnauthorized
	return fmt.Sprintf("%s sent %d request(s) that the bridge refused (401) for a missing or wrong token, the first %s %s (request %d of %d), and none it accepted: the CLI did not present the per-run token pvisor configured for it (a release that reads its credentials differently?); %s",
		bin, st.Unauthorized, u.Method, u.Path, u.N, st.Requests, logs)
}

func (r *run) idle() time.Duration {
	if r.req.IdleTimeout > 0 {
		return r.req.IdleTimeout
	}
	return DefaultIdleTimeout
}

// writeContinued stores the cleaned session and decodes it with the agent's
// own format.
func (r *run) writeContinued(session []byte) (*trajectory.Trajectory, error) {
	p := r.plan
	if _, err := r.nativeArtifact(nativeContinued, trajectory.PrefixExt(p.Format, p.Trajectory), session); err != nil {
		return nil, fail(result.WorkspaceError, "continued session: %v", err)
	}
	t, err := p.Format.Decode(bytes.NewReader(session), trajectory.Options{})
	if err != nil {
		// The session is kept for inspection; only the measurements are lost.
		r.res.Metadata["continued_session_decode_error"] = err.Error()
		return nil, nil
	}
	return t, nil
}

// compareNextAction writes next-action-comparison.json when both the
// recording and the continuation have an action after the boundary.
func (r *run) compareNextAction(continued *trajectory.Trajectory, injected bool) error {
	orig, repl := actionAfter(r.plan.Trajectory, r.req.AfterStep), actionAfter(continued, r.req.AfterStep)
	r.res.Metadata["action_agreement"] = agreement(r.plan.Trajectory, continued, r.req.AfterStep, r.cont.c.Paths.Reverse())
	if orig == nil || repl == nil {
		r.res.Metadata["next_action_comparison"] = map[string]any{"written": false,
			"original_present": orig != nil, "replayed_present": repl != nil}
		return nil
	}
	back := r.cont.c.Paths.Reverse()
	cmp := result.CompareNextAction(signature(orig, relocate.Paths{}), signature(repl, back), injected)
	if back.Active() {
		r.res.Metadata["next_action_comparison"] = map[string]any{"written": true,
			"replayed_paths_mapped": map[string]string{"from": back.From, "to": back.To}}
	}
	return r.writeJSONArtifact("next-action-comparison.json", RoleNextActionComparison, FormatNextAction, cmp)
}

// promptMetadata completes boundary_user_prompt from the envelope's counts.
func (r *run) promptMetadata(rep envelope.Report) {
	m := r.res.Metadata["boundary_user_prompt"].(map[string]any)
	if r.req.BoundaryUserPrompt == "" {
		return
	}
	m["injected"] = rep.PromptInjected > 0
	m["injection_count"] = rep.PromptInjected
	if rep.PromptInjected > 0 {
		delete(m, "reason")
		m["position"] = promptPosition
	}
}
