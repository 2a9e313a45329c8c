package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/google/uuid"

	"github.com/pvisor/pvisor/bridge/recorded"
	"github.com/pvisor/pvisor/replay/progress"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/replay/toolenv"
	"github.com/pvisor/pvisor/result"
	toolrun "github.com/pvisor/pvisor/run"
)

func configErr(format string, args ...any) *Failure {
	return fail(result.ConfigurationError, format, args...)
}

// NewRunID returns a fresh run id in the form existing tooling expects.
func NewRunID() string {
	return "replay-" + hex.EncodeToString(uuidBytes())
}

func uuidBytes() []byte {
	u := uuid.New()
	return u[:]
}

// run carries the state of one replay through its phases.
type run struct {
	req       *Request
	res       *result.Result
	stateDir  string
	outputDir string
	journal   *result.Journal
	plan      *Plan
	progress  *progress.Reporter // nil: quiet

	// Set by replayPrefix for the continuation.
	rebuilt []byte
	summary *Summary
	prefix  []byte // the native prefix, built before the run's directories (nil when too large to keep)
	// prefixSum and prefixLen describe the prefix whether kept or not.
	prefixSum [32]byte
	prefixLen int64
	// Continuation state (continue.go).
	cont     *contState
	recorded *recorded.Upstream
	// promptTpl is the boundary prompt file, loaded; its commands run
	// just before the continuation.
	promptTpl *prompt.Template
	degraded  []string // why quality is degraded beyond stale observations
	// cliPath is put first on the agent CLI's PATH: a node of the CLI's own
	// (checkAgentCLI); "" for none.
	cliPath string
	// tools is what replayed tools run in (toolenv), made on first use.
	tools *toolenv.Tools
}

// Run executes a request and returns its result; it never returns nil. The
// result's Failure says what went wrong, and result.ExitCode maps it to the
// process exit code.
func Run(ctx context.Context, req *Request) *result.Result {
	if req.RunID == "" {
		req.RunID = NewRunID()
	}
	r := &run{req: req, res: result.New(req.RunID, req.Agent)}
	r.res.Agent.DisallowedTools = append(r.res.Agent.DisallowedTools, req.DisallowedTools...)
	r.res.AfterStep = req.AfterStep
	r.res.Metadata["boundary_user_prompt"] = r.boundaryPromptMetadata()
	if m := toolenv.RunOptionsMeta(r.req.Run.Executor, r.req.Run.Policy); m != nil {
		r.res.Metadata["run_options"] = m
	}
	err := r.execute(ctx)
	if err != nil {
		r.finishFailure(err)
	}
	r.finishTools()
	if r.journal != nil {
		r.journal.Close()
	}
	r.plan.Close()
	return r.res
}

func (r *run) execute(ctx context.Context) error {
	if err := r.req.Validate(); err != nil {
		return err
	}
	if r.req.Run.Safe {
		r.res.Metadata["safe"] = r.req.safeMeta()
		r.res.Metadata["run_options"] = toolenv.RunOptionsMeta(r.req.Run.Executor, r.req.Run.Policy)
	}
	if r.needsOverlay() {
		return r.runIsolated(ctx)
	}
	plan, err := BuildPlan(r.req)
	if err != nil {
		return err
	}
	r.plan = plan
	r.res.Agent.Type = plan.Format.Agent()
	if v := plan.Trajectory.Version; v != "" {
		r.res.Agent.Version = &v
	}
	r.res.PrefixModelTurns = plan.Manifest.Boundary.PrefixModelTurns
	if err := r.checkBudget(); err != nil {
		return err
	}
	if err := r.loadBoundaryPrompt(ctx); err != nil {
		return err
	}
	if err := r.buildPrefix(); err != nil {
		return err
	}
	if err := r.allocate(); err != nil {
		return err
	}
	// pVisor's payloads first; "mode", "batches" and "stale_calls" are ours.
	var promptSHA *string
	if p := r.req.BoundaryUserPrompt; p != "" {
		sum := sha256.Sum256([]byte(p))
		s := hex.EncodeToString(sum[:])
		promptSHA = &s
	}
	if err := r.journal.Append(result.EventRunStarted, map[string]any{
		"run_id": r.req.RunID, "agent": plan.Format.Agent(), "mode": r.req.Mode.String(),
		"source_sha256": plan.Manifest.Source.SHA256, "after_step": r.req.AfterStep,
		"boundary_user_prompt_requested": r.promptRequested(),
		"boundary_user_prompt_sha256":    promptSHA,
	}); err != nil {
		return journalErr(err)
	}
	if err := r.journal.Append(result.EventPlanValidated, map[string]any{
		"profile":    plan.Manifest.Agent.Profile,
		"tool_calls": plan.Manifest.Boundary.ToolCalls, "batches": len(plan.Manifest.Batches),
		"stale_calls": len(plan.Stale),
	}); err != nil {
		return journalErr(err)
	}
	if err := r.writePlan(); err != nil {
		return err
	}
	r.res.SetPhase(result.PhasePrepared)
	r.res.Quality = result.QualityVerified
	if r.req.Mode == Continue {
		// Everything that can refuse the continuation is checked before a
		// tool runs: the agent CLI, its version, the upstream.
		if err := r.prepareContinue(ctx); err != nil {
			return err
		}
	}
	if r.req.Mode != PrepareOnly {
		if err := r.replayPrefix(ctx); err != nil {
			return err
		}
	}
	before := r.snapshotWorkspace()
	if r.req.Mode == Continue {
		if err := r.expandBoundaryPrompt(ctx); err != nil {
			return err
		}
		err := r.continueAgent(ctx)
		// A continuation that failed still changed the workspace, and the
		// study grades what it left; an interrupted run is not graded.
		if ctx.Err() == nil {
			r.writeWorkspaceDiff(before)
		}
		if err != nil {
			if ctx.Err() == nil {
				r.verify(ctx)
			}
			return err
		}
	}
	if r.req.Mode != PrepareOnly {
		r.verify(ctx)
	}
	if len(plan.Stale) > 0 || len(r.degraded) > 0 {
		r.res.Quality = result.QualityDegraded
	}
	if err := r.journal.Append(result.EventRunFinished, map[string]any{"status": *r.res.Phase}); err != nil {
		return journalErr(err)
	}
	r.writeOutputs()
	return nil
}

// journalErr is a failed journal write: the state dir's fault when its
// disk is full or read-only (exit 20, as a full output dir), pvisor's
// otherwise.
func journalErr(err error) error {
	if noSpace(err) {
		return fail(result.WorkspaceError, "journal: %v (free space in the state dir, or choose another --state-dir)", err)
	}
	return fail(result.InternalError, "journal: %v", err)
}

func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}

func (r *run) checkBudget() error {
	max, prefix := r.req.MaxSteps, r.res.PrefixModelTurns
	if max == 0 {
		return nil
	}
	switch r.req.Mode {
	case ReplayOnly:
		if max < prefix {
			return configErr("--max-steps %d is smaller than the replay prefix of %d model turns", max, prefix)
		}
	case Continue:
		if max <= prefix {
			return configErr("--max-steps %d leaves no live step after the replay prefix of %d model turns (use at least %d)", max, prefix, prefix+1)
		}
	}
	return nil
}

// boundaryPromptMetadata describes the boundary prompt without its text.
func (r *run) boundaryPromptMetadata() map[string]any {
	m := map[string]any{"requested": r.promptRequested(), "injected": false, "injection_count": 0}
	promptDigest(m, r.req.BoundaryUserPrompt)
	switch r.req.Mode {
	case PrepareOnly:
		m["reason"] = "prepare_only"
	case ReplayOnly:
		m["reason"] = "replay_only"
	default:
		m["reason"] = "not_injected"
	}
	return m
}

func (r *run) artifact(role, format, path string) {
	r.res.Artifacts = append(r.res.Artifacts, result.Artifact{Role: role, Format: format, Path: path})
}

// finishFailure records the failure in the result, the journal and the
// output dir, as far as the run got.
func (r *run) finishFailure(err error) {
	var f *Failure
	if !errors.As(err, &f) {
		f = &Failure{Category: result.InternalError, Message: err.Error()}
	}
	r.res.Fail(f.Category, f.Message)
	if r.outputDir == "" {
		// Before the run had its output dir: pVisor's reduced object,
		// with the directories the run would have had.
		r.res.MarkEarly()
		r.res.StateDir, r.res.OutputDir = LocationHints(r.req)
		return
	}
	if r.res.Phase == nil {
		r.res.SetPhase(result.PhasePrepared)
	}
	r.res.Metadata["replayed_tool_calls_complete"] = false
	if r.journal != nil {
		_ = r.journal.Append(result.EventRunFailed, map[string]any{"category": f.Category, "message": f.Message})
		if n := finishedSinceStart(r.journal.Path()); n > r.res.ReplayedToolCalls {
			r.res.ReplayedToolCalls = n
		}
	}
	if r.outputDir != "" {
		r.writeOutputs()
	}
}

// finishedSinceStart counts the distinct calls with a tool_finished record
// since the last run_started: what pVisor reports as replayed_tool_calls
// when a run fails after some tools ran.
func finishedSinceStart(journal string) int {
	recs, err := result.ReadJournal(journal)
	if err != nil {
		return 0
	}
	done := map[string]bool{}
	for i := range recs {
		switch recs[i].Name() {
		case result.EventRunStarted:
			clear(done)
		case result.EventToolFinished:
			var p struct {
				CallID string `json:"call_id"`
			}
			if json.Unmarshal(recs[i].Event.Data.Payload, &p) == nil {
				done[p.CallID] = true
			}
		}
	}
	return len(done)
}

// writeOutputs copies the journal and writes result.json; failures here are
// reported on the result but cannot change its category any more.
func (r *run) writeOutputs() {
	r.finishTools()
	if r.journal != nil {
		dst := filepath.Join(r.outputDir, result.JournalFile)
		if err := r.journal.CopyTo(dst); err == nil {
			r.artifact(RoleEvents, FormatEvents, dst)
		}
	}
	if r.plan != nil {
		// This process ran the plan; behind an overlay the worker did,
		// and its result already lists these.
		r.writeSummary()
		r.addLogsArtifact()
	}
	if err := result.WriteJSON(filepath.Join(r.outputDir, "result.json"), r.res); err != nil {
		r.res.Metadata["result_write_error"] = fmt.Sprint(err)
	}
}

// toolsEnv is the run's tool environment, made on first use (the request
// is validated by then).
func (r *run) toolsEnv() *toolenv.Tools {
	if r.tools == nil {
		var warn func(string)
		if r.progress != nil {
			warn = r.warn
		}
		meta := map[string]any{} // what a run without a result yet records nowhere
		if r.res != nil {
			meta = r.res.Metadata
		}
		r.tools = toolenv.New(toolenv.Config{Overlaynet: r.req.Overlaynet, InheritEnv: r.req.Run.InheritEnv, PassEnv: r.req.Run.PassEnv,
			Executor: r.req.Run.Executor, Container: toolenv.ContainerConfig{Rootfs: r.req.Run.Rootfs, Image: r.req.Run.Image}},
			meta, warn)
	}
	return r.tools
}

// toolIsolation is the isolation of tools that run in workspace: the
// run's, in its container root under --executor container.
func (r *run) toolIsolation(workspace string) (toolrun.Isolation, error) {
	iso, err := r.toolsEnv().Isolation()
	if err != nil {
		return iso, err
	}
	c, err := r.toolsEnv().Container(iso, r.stateDir, workspace)
	if err != nil && iso.Memory != nil {
		iso.Memory.Close()
	}
	return c, err
}

// finishTools puts the egress proxy's summary and journal on the result.
func (r *run) finishTools() {
	if r.tools != nil {
		r.tools.Finish(r.outputDir)
		if err := r.tools.CloseContainer(); err != nil {
			r.res.Metadata["container_cleanup_error"] = err.Error()
		}
	}
}
