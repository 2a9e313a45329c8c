package replay

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pvisor/pvisor/replay/progress"
	"github.com/pvisor/pvisor/result"
)

// allocate creates the per-run state and output dirs and opens the journal.
// The output dir must be new: results of two runs never mix.
func (r *run) allocate() error {
	stateRoot, outputRoot, err := Roots(r.req.StateRoot, r.req.OutputRoot)
	if err != nil {
		return err
	}
	stateDir := filepath.Join(stateRoot, r.req.RunID)
	outputDir := filepath.Join(outputRoot, r.req.RunID)
	if err := r.checkDirs(stateRoot, outputRoot); err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fail(result.WorkspaceError, "state dir: %v", err)
	}
	// The output dir comes first: a run refused because its id was used
	// before must not touch that run's journal.
	if err := os.MkdirAll(outputRoot, 0o700); err != nil {
		return fail(result.WorkspaceError, "output dir: %v", err)
	}
	if err := os.Mkdir(outputDir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// An executor error (30), as pVisor reports a reused run id.
			return fail(result.ExecutorError, "output dir %s already exists; every run needs its own (choose a new --run-id or --output-dir)", outputDir)
		}
		return fail(result.WorkspaceError, "output dir: %v", err)
	}
	r.stateDir = stateDir
	r.res.StateDir = &stateDir
	j, err := result.OpenJournal(stateDir)
	if err != nil {
		os.Remove(outputDir) // ours and still empty
	}
	var amb *result.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return fail(result.AmbiguousExecution, "%v", err)
	case noSpace(err):
		return journalErr(err)
	case err != nil:
		return fail(result.WorkspaceError, "journal in %s: %v", stateDir, err)
	}
	r.journal = j
	var to io.Writer = os.Stderr
	if r.req.ProgressTo != nil {
		to = r.req.ProgressTo
	}
	r.progress = progress.New(r.req.Progress, to, r.req.AfterStep)
	j.Observe(r.progress.Event)
	r.outputDir = outputDir
	r.res.OutputDir = &outputDir
	return nil
}

// LocationHints are the state and output dirs a request's run has (or
// would have): <root>/<run id>, absolute. nil when the run id is not known
// yet or a root cannot be made absolute.
func LocationHints(req *Request) (stateDir, outputDir *string) {
	if req == nil || req.RunID == "" || !runIDPattern().MatchString(req.RunID) {
		return nil, nil
	}
	hint := func(root, def string) *string {
		abs, err := filepath.Abs(orDefault(root, def))
		if err != nil {
			return nil
		}
		p := filepath.Join(abs, req.RunID)
		return &p
	}
	return hint(req.StateRoot, DefaultStateRoot), hint(req.OutputRoot, DefaultOutputRoot)
}

// checkDirs refuses state and output roots that would mix with each other
// or with the workspace, where tools would see them (git status, rg) and an
// overlay would drop them.
func (r *run) checkDirs(stateRoot, outputRoot string) error {
	if stateRoot == outputRoot {
		return configErr("--state-dir and --output-dir are both %s; give them different directories (state holds the journal and overlay layers, output the artifacts)", stateRoot)
	}
	if r.req.Mode == PrepareOnly {
		return nil
	}
	ws := r.req.Overlay.Path
	if ws == "" {
		ws = r.req.Workspace
	}
	if ws == "" {
		ws, _ = os.Getwd()
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return configErr("workspace: %v", err)
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	for _, d := range []struct{ flag, path string }{{"--state-dir", stateRoot}, {"--output-dir", outputRoot}} {
		p := d.path
		if real, err := evalExisting(p); err == nil {
			p = real
		}
		if p == ws || strings.HasPrefix(p, ws+string(filepath.Separator)) || ws == "/" {
			return configErr("%s %s is inside the workspace %s: the replayed tools would see it, and an overlay would discard it; choose a directory outside the workspace", d.flag, d.path, ws)
		}
	}
	return nil
}

// evalExisting resolves symlinks in the longest existing prefix of p.
func evalExisting(p string) (string, error) {
	rest := ""
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest), nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", os.ErrNotExist
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// Roots are the absolute state and output roots of a run, defaults
// filled in.
func Roots(state, output string) (string, string, error) {
	stateRoot, err := filepath.Abs(orDefault(state, DefaultStateRoot))
	if err != nil {
		return "", "", configErr("--state-dir: %v", err)
	}
	outputRoot, err := filepath.Abs(orDefault(output, DefaultOutputRoot))
	if err != nil {
		return "", "", configErr("--output-dir: %v", err)
	}
	return stateRoot, outputRoot, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
