package resume

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/capture"
	"github.com/pvisor/pvisor/replay/prompt"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory/agents"
	"github.com/pvisor/pvisor/trajectory/session"
)

// Session modes: resume continues the conversation under its own id, fork
// continues a copy of it under a new one.
const (
	ModeResume = "resume"
	ModeFork   = "fork"
)

// SessionRequest is one pvisor resume or fork.
type SessionRequest struct {
	Mode  string
	Agent string
	// The session: by id in the agent's state under SourceHome (or its own
	// environment), or a bundle from pvisor capture.
	SessionID  string
	SourceHome string
	Bundle     string
	// Trajectory and AfterStep fork from the middle of a session: the
	// child is steps 1..AfterStep replayed in the workspace and rebuilt
	// under a new id (fork only).
	Trajectory string
	AfterStep  int
	// PrepareOnly takes the prefix as recorded (pvisor replay
	// --prepare-only) instead of re-running its tools in the workspace.
	PrepareOnly bool
	// TargetHome restores into a given HOME (what is there is backed up);
	// "" restores into an isolated home in the state dir.
	TargetHome string
	Workspace  string
	Prompt     prompt.Source
	// Completion is the agent's completion signal (default
	// prompt.DefaultSignal) and how long a CLI may hang after it.
	Completion prompt.Completion
	// OutputTag asks for structured output: the content of the last
	// <tag>…</tag> in the agent's text, checked against the JSON Schema
	// file OutputSchema when given; MaxRetries resumes the session that
	// many times with what was wrong.
	OutputTag    string
	OutputSchema string
	MaxRetries   int

	Upstream      string // a protocol, or "fake"; default the agent's own
	UpstreamModel string
	FakeScript    string

	AgentEntrypoint      string
	AgentArgs            []string
	AllowUntestedVersion bool
	IdleTimeout          time.Duration
	// UpstreamFirstByteTimeout and UpstreamIdleTimeout: see replay.Request.
	UpstreamFirstByteTimeout time.Duration
	UpstreamIdleTimeout      time.Duration

	RunID      string
	StateRoot  string
	OutputRoot string

	// Progress, when set, gets a line per phase ("pvisor resume: …").
	Progress io.Writer
}

// say writes a progress line, when the request asked for them.
func (r *sessionRun) say(format string, a ...any) {
	if r.req.Progress != nil {
		fmt.Fprintf(r.req.Progress, "pvisor %s: %s\n", r.req.Mode, fmt.Sprintf(format, a...))
	}
}

// sessionRun is one resume or fork in progress.
type sessionRun struct {
	req       *SessionRequest
	res       *result.Result
	store     session.Store
	spec      resumeSpec
	stateDir  string
	outputDir string
	meta      map[string]any
	tmpl      *prompt.Template
	schema    *prompt.Schema
	retries   []map[string]any
	cliPath   string // see run.cliPath
}

// RunSession restores a captured session into a home, resumes (or forks)
// it with the agent CLI's native flags through the bridge, and captures
// the session again into the output dir. It never returns nil; bad input
// fails before anything is written.
func RunSession(ctx context.Context, req *SessionRequest) *result.Result {
	if req.RunID == "" {
		req.RunID = replay.NewRunID()
	}
	res := result.New(req.RunID, req.Agent)
	r := &sessionRun{req: req, res: res, meta: map[string]any{"mode": req.Mode}}
	res.Metadata["session"] = r.meta
	if err := r.run(ctx); err != nil {
		cat := Category(err)
		res.Fail(cat, err.Error())
		if r.stateDir == "" {
			res.MarkEarly()
		}
	}
	if r.outputDir != "" {
		// As a replay's: result.json is the printed line, not an artifact.
		if err := result.WriteFile(filepath.Join(r.outputDir, "result.json"), res.Line()); err != nil {
			r.warn("result.json: " + err.Error())
		}
	}
	return res
}

// Category is the failure category of an error from the engine.
func Category(err error) string {
	if f, ok := err.(*result.Failure); ok {
		return f.Category
	}
	return capture.Category(err)
}

// source is the session a run starts from, found before anything is written.
type source struct {
	bundle     string            // a bundle to restore from
	located    *session.Located  // or a session in a home, captured first
	trajectory string            // or a trajectory whose prefix is replayed
	hashes     map[string]string // of the parent's files, before the run
	parentID   string
	childID    string // set when pvisor made the child itself
}

func (r *sessionRun) run(ctx context.Context) error {
	req := r.req
	if req.Mode != ModeResume && req.Mode != ModeFork {
		return fail(result.InternalError, "unknown session mode %q", req.Mode)
	}
	store, ok := agents.Resumable(req.Agent)
	spec, ok2 := resumeSpecOf(req.Agent)
	if !ok || !ok2 {
		return fail(result.UnsupportedAgent, "%s sessions cannot be resumed or forked by this build; supported: %s", req.Agent, strings.Join(resumeAgents(), ", "))
	}
	r.store, r.spec = store, spec
	r.res.Agent.Type = store.Agent()
	if !replay.ValidRunID(req.RunID) {
		return configErr("--run-id %q: use letters, digits, '-' and '_'", req.RunID)
	}
	if err := r.checkOptions(); err != nil {
		return err
	}
	ws, err := checkWorkspace(req.Workspace)
	if err != nil {
		return err
	}
	if req.TargetHome != "" {
		if err := checkTargetHome(req.TargetHome); err != nil {
			return err
		}
	}
	var src *source
	switch {
	case req.Trajectory == "" && (req.AfterStep != 0 || req.PrepareOnly):
		return configErr("--after-step and --prepare-only need --trajectory FILE, the session to fork from the middle of")
	case req.Trajectory != "":
		src, err = r.checkPrefixSource()
	default:
		src, err = r.findSource()
	}
	if err != nil {
		return err
	}
	if err := r.loadPrompt(ctx, ws, src.parentID); err != nil {
		return err
	}
	up, upMeta, err := r.upstream()
	if err != nil {
		return err
	}
	if c, ok := up.(interface{ Close() error }); ok {
		defer c.Close()
	}
	// From here on, the run writes: its state and output dirs first.
	if err := r.makeDirs(); err != nil {
		return err
	}
	entry, err := r.probe(ctx)
	if err != nil {
		return err
	}
	bundle := src.bundle
	switch {
	case src.trajectory != "":
		if bundle, err = r.prefixBundle(ctx, src, ws); err != nil {
			return err
		}
	case r.spec.Export != nil && bundle == "":
		if bundle, err = r.exportSource(src, entry, ws); err != nil {
			return err
		}
	case bundle == "":
		if bundle, _, err = capture.Capture(capture.Options{Store: store, Root: src.located.Root, ID: src.parentID,
			StoreDir: filepath.Join(r.stateDir, "source")}); err != nil {
			return err
		}
		r.meta["source_home_state"] = src.located.Root
	}
	text, err := r.expandPrompt(ctx, ws)
	if err != nil {
		return err
	}
	home := req.TargetHome
	if home == "" {
		home = filepath.Join(r.stateDir, "home")
	}
	root, err := store.Root(home, os.Getenv)
	if err != nil {
		return configErr("%v", err)
	}
	restored, err := capture.Restore(capture.RestoreOptions{Bundle: bundle, Store: store, Root: root, Workspace: ws})
	if err != nil {
		return err
	}
	r.say("restored %s session %s into %s", store.Agent(), restored.Manifest.SessionID, root)
	r.meta["restored"] = map[string]any{"bundle": bundle, "path": restored.Main, "files": len(restored.Files),
		"origin_cwd": restored.Manifest.OriginCwd, "cwd": restored.Cwd, "cwd_rewrites": restored.Rewrites}
	if restored.Backup != "" {
		r.meta["restored"].(map[string]any)["backup"] = restored.Backup
		r.warn("files already in " + root + " were moved to " + restored.Backup)
	}
	if src.trajectory != "" && !req.PrepareOnly {
		r.res.SetPhase(result.PhaseReplayed)
	} else {
		r.res.SetPhase(result.PhasePrepared) // restored, ready to resume
	}
	restoredSum, err := fileSum(restored.Main)
	if err != nil {
		return fail(result.WorkspaceError, "%v", err)
	}
	// The responses the session holds before the agent runs: what it
	// holds after, less these, are the continued steps.
	before, err := sessionActions(store.Agent(), restored.Main)
	if err != nil {
		r.meta["restored_session_decode_error"] = err.Error()
	}
	in := launchInput{home: home, root: root, cwd: restored.Cwd, main: restored.Main, up: up, upMeta: upMeta}
	first := attempt{mode: req.Mode, sid: src.parentID, text: text}
	if src.childID != "" {
		first = attempt{mode: ModeResume, sid: src.childID, text: text}
	}
	version := ""
	if v := r.res.Agent.Version; v != nil {
		version = " " + *v
	}
	r.say("continuing it with %s%s through the bridge (upstream %v)", store.Agent(), version, upMeta["kind"])
	childID, err := r.attempts(ctx, entry, in, first)
	if f, ok := up.(*fakeUpstream); ok {
		st := f.stats()
		upMeta["fake_model"] = st
		if n := st["script_exhausted"].(int); n > 0 && !f.final {
			r.warn(fmt.Sprintf("the fake model's script ran out: %d request(s) past its %d replies got the default final text (give the script more replies, or a \"final\" of its own)", n, st["replies"]))
		}
	}
	if err != nil {
		return err
	}
	if err := r.checkParent(src, restored.Main, restoredSum, childID); err != nil {
		return err
	}
	dir, m, err := capture.Capture(capture.Options{Store: store, Root: root, ID: childID, StoreDir: filepath.Join(r.outputDir, "sessions")})
	if err != nil {
		return fail(result.ContinuationError, "capturing the %s session after the run: %v", req.Mode, err)
	}
	r.meta["bundle"] = dir
	r.meta["session_id"] = childID
	r.res.Artifacts = append(r.res.Artifacts, result.Artifact{Role: "native_session_bundle",
		Format: store.Agent() + "/" + capture.Schema, Path: dir})
	r.meta["captured_files"] = len(m.Files)
	r.countContinued(before, dir, m)
	r.say("%d live step(s); session %s captured into %s", r.res.ContinuedSteps, childID, dir)
	r.res.AgentStatus = result.AgentCompleted
	r.res.SetPhase(result.PhaseContinued)
	if r.res.Metadata["quality_reasons"] == nil {
		r.res.Quality = result.QualityVerified
	}
	return nil
}

// checkWorkspace is the workspace's absolute path; it must be a directory.
func checkWorkspace(ws string) (string, error) {
	if ws == "" {
		return "", configErr("--workspace is required: the directory the agent resumes in")
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", configErr("--workspace: %v", err)
	}
	st, err := os.Stat(abs)
	if err != nil || !st.IsDir() {
		return "", fail(result.WorkspaceError, "--workspace %s is not a directory", abs)
	}
	return abs, nil
}

// findSource finds the session without writing anything: a bundle is
// loaded (hashes checked), a session in a home located by id.
func (r *sessionRun) findSource() (*source, error) {
	req := r.req
	switch {
	case req.Bundle != "" && req.SourceHome != "":
		return nil, configErr("--bundle restores into --home; to take the session from a home, pass --session and --home without --bundle")
	case req.Bundle != "":
		m, err := capture.Load(req.Bundle)
		if err != nil {
			return nil, err
		}
		if m.Agent != r.store.Agent() {
			return nil, configErr("bundle %s holds a %s session, not %s", req.Bundle, m.Agent, r.store.Agent())
		}
		if req.SessionID != "" && req.SessionID != m.SessionID {
			return nil, configErr("bundle %s holds session %s, not %s", req.Bundle, m.SessionID, req.SessionID)
		}
		hashes, err := capture.Hash(req.Bundle)
		if err != nil {
			return nil, err
		}
		abs, _ := filepath.Abs(req.Bundle)
		r.meta["parent_id"] = m.SessionID
		return &source{bundle: abs, hashes: hashes, parentID: m.SessionID}, nil
	case req.SessionID == "":
		return nil, configErr("pass --session ID (with --home when the agent ran under another HOME) or --bundle DIR")
	}
	if err := session.CheckID(req.SessionID); err != nil {
		return nil, err
	}
	root, err := r.store.Root(req.SourceHome, os.Getenv)
	if err != nil {
		return nil, configErr("%v", err)
	}
	var loc *session.Located
	if r.spec.Export != nil {
		loc, err = locateInDatabase(r.store.Agent(), root, req.SessionID)
	} else {
		loc, err = r.store.Locate(root, req.SessionID)
	}
	if err != nil {
		return nil, err
	}
	hashes := map[string]string{}
	for _, rel := range append([]string{loc.Main}, loc.Sidecars...) {
		s, err := fileSum(filepath.Join(root, rel))
		if err != nil {
			return nil, fail(result.TrajectoryError, "%v", err)
		}
		hashes[filepath.ToSlash(rel)] = s
	}
	r.meta["parent_id"] = req.SessionID
	return &source{located: loc, hashes: hashes, parentID: req.SessionID}, nil
}
