package replay

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/envelope"
	"github.com/pvisor/pvisor/replay/agentproc"
	"github.com/pvisor/pvisor/replay/outcome"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

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
		r.res.ContinuedSteps = outcome.LiveActions(continued, r.req.AfterStep)
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
	if err := r.journal.Append(result.EventContinuationFinished, map[string]any{
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
			"the bridge refused a model request and stopped %s (that request was not forwarded): %s", bin, ct.refusal.Reason)
	case ct.stop == agentproc.StopBudget:
		return result.AgentMaxSteps, nil
	case ct.stop == agentproc.StopIdle:
		return result.AgentFailed, fail(result.ContinuationError, "%s showed no activity for %s and was stopped; %s", bin, r.idle(), logs)
	case ct.stop == agentproc.StopCanceled:
		return result.AgentFailed, fail(result.ContinuationError, "the run was interrupted while %s was running", bin)
	case ct.waitErr != nil:
		return result.AgentFailed, fail(result.InternalError, "waiting for %s: %v", bin, ct.waitErr)
	case ct.report.Accepted == 0 && ct.stats.FirstUnauthorized != nil:
		return result.AgentFailed, fail(result.ContinuationError, "%s", TokenRefused(bin, ct.stats, logs))
	case ct.code != 0 || (ct.stats.LastFailure != nil && r.res.ContinuedSteps == 0):
		// Some CLIs (Pi) exit 0 when the model failed; with no live step
		// taken the run did not continue, whatever the exit status says.
		if lf := ct.stats.LastFailure; lf != nil {
			cat := map[bridge.FailureKind]string{bridge.FailureRateLimit: result.ModelRateLimit,
				bridge.FailureInternal: result.ModelInternalError, bridge.FailureConnection: result.ModelConnectionError}[lf.Kind]
			return result.AgentFailed, fail(cat, "%s; retry later", UpstreamFailed(bin, lf))
		}
		how := fmt.Sprintf("status %d", ct.code)
		if ct.signal != "" {
			how = "signal " + ct.signal
		}
		return result.AgentFailed, fail(result.ContinuationError, "%s ended with %s; %s", bin, how, logs)
	case ct.report.Accepted == 0:
		return result.AgentFailed, fail(result.ContinuationError, "%s", NoAnswer(bin, ct.stats, logs))
	case ct.collErr != nil:
		return result.AgentFailed, fail(result.ContinuationError, "the continued session: %v", ct.collErr)
	}
	return result.AgentCompleted, nil
}

// TokenRefused says that the CLI did reach the bridge, but without the
// per-run token it was configured with, so no model request was accepted.
func TokenRefused(bin string, st bridge.Stats, logs string) string {
	u := st.FirstUnauthorized
	return fmt.Sprintf("%s sent %d request(s) that the bridge refused (401) for a missing or wrong token, the first %s %s (request %d of %d), and none it accepted: the CLI did not present the per-run token pvisor configured for it (a release that reads its credentials differently?); %s",
		bin, st.Unauthorized, u.Method, u.Path, u.N, st.Requests, logs)
}

// NoAnswer says that the CLI ended with no model answer forwarded to it in
// full, telling a CLI that never asked from one whose requests all ended
// another way: those are the bridge records to read.
func NoAnswer(bin string, st bridge.Stats, logs string) string {
	if st.Requests == 0 {
		return fmt.Sprintf("%s ended without sending a model request through the bridge; %s", bin, logs)
	}
	return fmt.Sprintf("%s ended with no model answer reaching it in full: %d request(s) through the bridge, %d validated, %d refused, %d rejected, none forwarded (the bridge records say how each ended); %s",
		bin, st.Requests, st.Validated, st.Refused, st.Rejected, logs)
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
	orig, repl := outcome.ActionAfter(r.plan.Trajectory, r.req.AfterStep), outcome.ActionAfter(continued, r.req.AfterStep)
	r.res.Metadata["action_agreement"] = outcome.Agreement(r.plan.Trajectory, continued, r.req.AfterStep, r.cont.c.Paths.Reverse())
	if orig == nil || repl == nil {
		r.res.Metadata["next_action_comparison"] = map[string]any{"written": false,
			"original_present": orig != nil, "replayed_present": repl != nil}
		return nil
	}
	back := r.cont.c.Paths.Reverse()
	cmp := result.CompareNextAction(outcome.Signature(orig, relocate.Paths{}), outcome.Signature(repl, back), injected)
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
