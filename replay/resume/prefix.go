package resume

import (
	"bytes"
	"context"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/result"
	toolrun "github.com/pvisor/pvisor/run"
	"github.com/pvisor/pvisor/trajectory/session"
)

// checkPrefixSource checks a fork --after-step request before anything is
// written and hashes the trajectory (the parent).
func (r *sessionRun) checkPrefixSource() (*source, error) {
	req := r.req
	switch {
	case req.Mode != ModeFork:
		return nil, configErr("--after-step and --trajectory are fork's: a resume continues a whole session")
	case req.SessionID != "" || req.Bundle != "" || req.SourceHome != "":
		return nil, configErr("fork --after-step takes the session from --trajectory; drop --session, --bundle and --home")
	case req.PrepareOnly && req.Trajectory == "":
		return nil, configErr("--prepare-only goes with --trajectory and --after-step")
	case req.AfterStep < 1:
		return nil, configErr("--after-step %d: steps count from 1 (see pvisor inspect)", req.AfterStep)
	}
	if _, ok := r.store.(session.Brancher); !ok {
		return nil, fail(result.UnsupportedAgent, "fork --after-step of %s is not supported", r.store.Agent())
	}
	abs, err := filepath.Abs(req.Trajectory)
	if err != nil {
		return nil, configErr("--trajectory: %v", err)
	}
	sum, err := fileSum(abs)
	if err != nil {
		return nil, fail(result.TrajectoryError, "--trajectory: %v", err)
	}
	// The boundary and the prefix's tools are checked now, before the
	// upstream and its keys: a fork after step 9 of a 5-step session says so.
	mode := replay.ReplayOnly
	if req.PrepareOnly {
		mode = replay.PrepareOnly
	}
	plan, err := replay.BuildPlan(&replay.Request{Agent: r.store.Agent(), Trajectory: abs, AfterStep: req.AfterStep, Mode: mode})
	if err != nil {
		return nil, err
	}
	plan.Close()
	req.Trajectory = abs
	return &source{trajectory: abs, hashes: map[string]string{filepath.Base(abs): sum}}, nil
}

// prefixBundle replays steps 1..N of the trajectory in the workspace, as
// `pvisor replay --replay-only` does, gives the rebuilt session a new id
// and captures it as a bundle: the child, ready to resume.
func (r *sessionRun) prefixBundle(ctx context.Context, src *source, ws string) (string, error) {
	agent := r.store.Agent()
	mode, role := replay.ReplayOnly, replay.RoleReconstructed
	if r.req.PrepareOnly {
		mode, role = replay.PrepareOnly, replay.RolePreparedPrefix
	}
	r.say("replaying steps 1..%d of %s", r.req.AfterStep, filepath.Base(src.trajectory))
	rep := replay.Run(ctx, &replay.Request{Agent: agent, Trajectory: src.trajectory, AfterStep: r.req.AfterStep, Mode: mode,
		Workspace: ws, RunID: "prefix", StateRoot: filepath.Join(r.stateDir, "prefix", "state"),
		OutputRoot: filepath.Join(r.stateDir, "prefix", "output")})
	r.meta["prefix"] = map[string]any{"mode": mode.String(), "after_step": r.req.AfterStep, "replayed_tool_calls": rep.ReplayedToolCalls,
		"quality": rep.Quality, "output_dir": rep.OutputDir}
	r.res.AfterStep, r.res.ReplayedToolCalls, r.res.PrefixModelTurns = r.req.AfterStep, rep.ReplayedToolCalls, rep.PrefixModelTurns
	if rep.Failure != nil {
		return "", fail(rep.Failure.Category, "replaying the prefix: %s", rep.Failure.Message)
	}
	switch {
	case r.req.PrepareOnly:
		r.res.Metadata["quality_reasons"] = []string{"the prefix keeps the recorded observations (--prepare-only): none was regenerated here"}
	case rep.Quality != result.QualityVerified:
		r.res.Metadata["quality_reasons"] = []string{"the replayed prefix is " + rep.Quality}
	}
	rebuilt := ""
	for _, a := range rep.Artifacts {
		switch a.Role {
		case role:
			rebuilt = a.Path
		case replay.RoleObservationComparison, replay.RoleSummary:
			// The prefix's drift, beside the fork's result.
			dst := filepath.Join(r.outputDir, filepath.Base(a.Path))
			if err := toolrun.CopyRegularFile(a.Path, dst); err != nil {
				return "", fail(result.WorkspaceError, "copying the prefix's %s: %v", filepath.Base(a.Path), err)
			}
			r.res.Artifacts = append(r.res.Artifacts, result.Artifact{Role: a.Role, Format: a.Format, Path: dst})
		}
	}
	if rebuilt == "" {
		return "", fail(result.InternalError, "the prefix replay wrote no %s", role)
	}
	data, err := os.ReadFile(rebuilt)
	if err != nil {
		return "", fail(result.WorkspaceError, "%v", err)
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	l := r.store.(session.Brancher)
	parent := l.FileID(first)
	if parent == "" {
		return "", fail(result.TrajectoryError, "the rebuilt %s session names no session id on its first line", agent)
	}
	child := l.NewID()
	// Every JSON string that is exactly the parent's id becomes the
	// child's: the id fields, never text that merely mentions it.
	data = bytes.ReplaceAll(data, []byte(`"`+parent+`"`), []byte(`"`+child+`"`))
	o, err := r.store.Origin(bytes.NewReader(data))
	if err != nil || o.Cwd == "" {
		return "", fail(result.TrajectoryError, "the rebuilt %s session records no cwd (%v)", agent, err)
	}
	rel, err := l.File(first, o.Cwd, child)
	if err != nil {
		return "", fail(result.TrajectoryError, "%v", err)
	}
	home := filepath.Join(r.stateDir, "prefix", "home")
	root, err := r.store.Root(home, os.Getenv)
	if err != nil {
		return "", fail(result.InternalError, "%v", err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o700); err != nil {
		return "", fail(result.WorkspaceError, "%v", err)
	}
	if err := os.WriteFile(filepath.Join(root, rel), data, 0o600); err != nil {
		return "", fail(result.WorkspaceError, "%v", err)
	}
	bundle, _, err := capture.Capture(capture.Options{Store: r.store, Root: root, ID: child, StoreDir: filepath.Join(r.stateDir, "source")})
	if err != nil {
		return "", err
	}
	src.parentID, src.childID = parent, child
	r.meta["parent_id"] = parent
	return bundle, nil
}
