package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pvisor/pvisor/replay/toolenv"
	"github.com/pvisor/pvisor/result"
	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory"
)

// CallComparison is one entry of observation-comparison.json.
type CallComparison struct {
	Step   int    `json:"step"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Exact  bool   `json:"exact"`
	// NormalizedExact is set when the observation differs: equal once the
	// format's run-to-run fields (trajectory.Normalizer) are masked and the
	// workspace path in fresh output is mapped back to the recorded cwd.
	NormalizedExact *bool  `json:"normalized_exact,omitempty"`
	Stale           bool   `json:"stale,omitempty"`
	OriginalIsError bool   `json:"original_is_error"`
	ReplayedIsError bool   `json:"replayed_is_error"`
	Diff            string `json:"diff,omitempty"`
}

// replayPrefix re-runs the calls of steps 1..N, rebuilds the native session
// with the fresh observations and compares them with the recorded ones.
func (r *run) replayPrefix(ctx context.Context) error {
	p := r.plan
	rp, ok := p.Format.(trajectory.Replayer)
	if !ok {
		return fail(result.UnsupportedAgent, "%s: re-running the prefix is not supported for this agent yet; use --prepare-only", p.Format.Agent())
	}
	workspace, err := r.workspace()
	if err != nil {
		return err
	}
	logDir := filepath.Join(r.outputDir, "logs", "historical-tools")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return fail(result.WorkspaceError, "logs: %v", err)
	}
	iso, err := r.toolIsolation(workspace)
	if err != nil {
		return err
	}
	if iso.Memory != nil {
		defer iso.Memory.Close() // after the session's Close killed the tools
	}
	enforce := r.req.Run.Policy == toolenv.PolicyEnforce
	if enforce {
		if iso, err = r.toolsEnv().Enforce(iso, workspace); err != nil {
			return err
		}
	}
	continuing := ""
	if r.cont != nil && r.res.Agent.Version != nil {
		continuing = *r.res.Agent.Version
	}
	sess, err := rp.NewToolSession(trajectory.ToolEnv{
		Workspace: workspace, OriginalCwd: p.Trajectory.Cwd, Version: p.Trajectory.Version, ContinuingVersion: continuing,
		Env: r.toolsEnv().Vars(), LogDir: logDir, Isolation: iso, Trajectory: p.Trajectory,
	})
	if err != nil {
		return fail(result.ExecutorError, "starting the %s tool session: %v", p.Format.Agent(), err)
	}
	defer sess.Close()
	if sr, ok := sess.(trajectory.SemanticsReporter); ok {
		r.res.Metadata["tool_semantics"] = sr.Semantics()
	}
	writes := toolrun.WatchWrites(workspace)
	defer writes.Stop()
	if enforce {
		writes.Enforce()
	}

	stale := map[string]bool{}
	for _, s := range p.Stale {
		stale[s.Call.ID] = true
	}
	fresh := map[string]trajectory.Fresh{}
	var comps []CallComparison
	for _, a := range p.Trajectory.Steps() {
		if a.Step > r.req.AfterStep {
			break
		}
		for i := range a.Calls {
			c := &a.Calls[i]
			orig := c.Observation
			var f trajectory.Fresh
			if stale[c.ID] {
				f = trajectory.Fresh{Content: orig.Content, IsError: orig.IsError, Reused: true}
			} else {
				if f, err = r.executeCall(ctx, sess, a.Step, c); err != nil {
					return err
				}
			}
			fresh[c.ID] = f
			comp := CallComparison{Step: a.Step, CallID: c.ID, Tool: c.Name, Stale: stale[c.ID],
				OriginalIsError: orig.IsError, ReplayedIsError: f.IsError}
			comp.Exact = !comp.Stale && orig.Content == f.Content && orig.IsError == f.IsError
			if norm := r.normalizer(workspace); norm != nil && !comp.Stale && !comp.Exact {
				eq := norm(orig.Content, false) == norm(f.Content, true) && orig.IsError == f.IsError
				comp.NormalizedExact = &eq
			}
			if orig.Content != f.Content {
				comp.Diff = result.UnifiedDiff("original/"+c.ID, "replayed/"+c.ID, orig.Content, f.Content, 3)
			}
			comps = append(comps, comp)
		}
	}
	if out := writes.Outside(); len(out) > 0 {
		// Neither the workspace nor an overlay of it holds these files:
		// they stay changed on this machine whatever the commit mode.
		r.res.Metadata["writes_outside_workspace"] = out
		r.degrade(fmt.Sprintf("file tools wrote %d file(s) outside the workspace %s (see writes_outside_workspace)", len(out), workspace))
	}
	if denied := writes.Denied(); len(denied) > 0 {
		r.res.Metadata["writes_denied"] = denied
		r.warn(toolenv.DeniedNote(len(denied), workspace))
	}
	if comps == nil {
		comps = []CallComparison{}
	}
	if err := r.writeJSONArtifact("observation-comparison.json", "observation_comparison", "sandbox-playback/comparison-v1", comps); err != nil {
		return err
	}
	sum, err := r.rebuild(rp, fresh)
	if err != nil {
		return err
	}
	r.res.SetPhase(result.PhaseReplayed)
	r.res.ReplayedToolCalls = len(fresh) - len(p.Stale)
	r.res.Quality = result.QualityVerified
	if len(p.Stale) > 0 {
		r.res.Quality = result.QualityDegraded
	}
	r.summary = r.newSummary(comps, sum)
	return nil
}

// normalizer masks what differs between runs however faithful the replay:
// the format's run-to-run fields (trajectory.Normalizer) and, when the
// replay runs somewhere else than the recording, the workspace path in
// fresh output. nil when there is nothing to mask.
func (r *run) normalizer(workspace string) func(s string, fresh bool) string {
	n, _ := r.plan.Format.(trajectory.Normalizer)
	orig := r.plan.Trajectory.Cwd
	moved := orig != "" && orig != workspace
	if n == nil && !moved {
		return nil
	}
	return func(s string, fresh bool) string {
		if fresh && moved {
			s = strings.ReplaceAll(s, workspace, orig)
		}
		if n != nil {
			s = n.NormalizeObservation(s)
		}
		return s
	}
}

// executeCall runs one call between its journal records. A pvisor failure
// leaves tool_started without a finish on purpose: the workspace may have
// been changed halfway, and the state dir must not be trusted again.
func (r *run) executeCall(ctx context.Context, sess trajectory.ToolSession, step int, c *trajectory.ToolCall) (trajectory.Fresh, error) {
	if err := r.journal.Append(result.EventToolStarted, map[string]any{"batch": step, "call_id": c.ID, "tool": c.Name}); err != nil {
		return trajectory.Fresh{}, journalErr(err)
	}
	r.toolsEnv().SetCall(toolenv.CallOf(step, c.ID, c.Name))
	callCtx := ctx
	if ms := r.req.Run.TimeoutMS; ms > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
		defer cancel()
	}
	f, err := sess.Execute(callCtx, step, c)
	if ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return f, fail(result.AmbiguousExecution, "step %d: %s call %s ran past --timeout-ms %d and was killed; the workspace may be half-changed (raise the limit, or replay fewer steps)", step, c.Name, c.ID, r.req.Run.TimeoutMS)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return f, fail(result.AmbiguousExecution, "step %d: %s call %s was interrupted: %v", step, c.Name, c.ID, err)
		}
		return f, fail(result.ExecutorError, "step %d: %s call %s: %v", step, c.Name, c.ID, err)
	}
	fin := map[string]any{"batch": step, "call_id": c.ID, "is_error": f.IsError, "duration_ms": f.Duration.Milliseconds()}
	if f.ExitCode != nil {
		fin["return_code"] = *f.ExitCode
	}
	if err := r.journal.Append(result.EventToolFinished, fin); err != nil {
		return f, journalErr(err)
	}
	return f, nil
}

// rebuild writes the native session with the fresh observations.
func (r *run) rebuild(rp trajectory.Replayer, fresh map[string]trajectory.Fresh) (string, error) {
	p := r.plan
	src, err := p.Source()
	if err != nil {
		return "", err
	}
	// Streamed to its file and hashed on the way, so a late step's session
	// is held only by a continuation, which stages these bytes.
	h := sha256.New()
	sinks := []io.Writer{h}
	var keep *bytes.Buffer
	if r.req.Mode == Continue {
		keep = new(bytes.Buffer)
		sinks = append(sinks, keep)
	}
	out := &recordingWriter{}
	var rebuildErr error
	_, err = r.nativeArtifactStream(nativeReconstructed, trajectory.RebuildExt(p.Format, p.Trajectory), func(w io.Writer) error {
		out.w = w
		rebuildErr = rp.Rebuild(io.MultiWriter(append(sinks, out)...), src, p.SourceSize, p.Trajectory, r.req.AfterStep, fresh)
		return rebuildErr
	})
	switch {
	case out.err != nil:
		return "", fail(result.WorkspaceError, "reconstructed session: %v", out.err)
	case rebuildErr != nil:
		return "", fail(result.InternalError, "rebuilding the %s session: %v", p.Format.Agent(), rebuildErr)
	case err != nil:
		return "", fail(result.WorkspaceError, "reconstructed session: %v", err)
	}
	if keep != nil {
		r.rebuilt = keep.Bytes()
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := r.journal.Append(result.EventSessionRebuilt, map[string]any{"prepared_only": false, "sha256": sum}); err != nil {
		return "", journalErr(err)
	}
	if l, _ := launcherOf(p.Format.Agent()); l != nil {
		if n, ok := l.(NativeCLINamer); ok {
			r.res.Metadata["native_cli"] = n.NativeCLI()
		}
	}
	return sum, nil
}

// recordingWriter keeps the first error of the writer it wraps, so a full
// disk is told from a failed rebuild.
type recordingWriter struct {
	w   io.Writer
	err error
}

func (rw *recordingWriter) Write(p []byte) (int, error) {
	n, err := rw.w.Write(p)
	if err != nil && rw.err == nil {
		rw.err = err
	}
	return n, err
}

func (r *run) writeJSONArtifact(name, role, format string, v any) error {
	path := filepath.Join(r.outputDir, name)
	if err := result.WriteJSON(path, v); err != nil {
		return fail(result.WorkspaceError, "%s: %v", name, err)
	}
	r.artifact(role, format, path)
	return nil
}

// workspace is where tools run: --workspace, or the current directory.
func (r *run) workspace() (string, error) {
	ws := r.req.Workspace
	if ws == "" {
		var err error
		if ws, err = os.Getwd(); err != nil {
			return "", fail(result.WorkspaceError, "current directory: %v", err)
		}
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", fail(result.WorkspaceError, "workspace %s: %v", ws, err)
	}
	st, err := os.Stat(abs)
	if err != nil || !st.IsDir() {
		return "", fail(result.WorkspaceError, "workspace %s is not a directory", abs)
	}
	return abs, nil
}
