package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/overlay"
	"github.com/pvisor/pvisor/result"
)

// ChildCommand is the hidden subcommand the overlay worker runs. The
// request travels on the worker's stdin: never on disk, because it may hold
// the boundary prompt, whose text must never be stored, and never in an
// environment variable, which /proc/<pid>/environ shows for the process's
// whole life.
const ChildCommand = "__replay-in-overlay"

// maxChildRequest bounds the request read from stdin.
const maxChildRequest = 64 << 20

// ChildRequest reads the request the parent handed over on stdin.
func ChildRequest() (*Request, error) {
	if st, err := os.Stdin.Stat(); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return nil, errors.New(ChildCommand + " is internal to pvisor replay --overlayfs-path")
	}
	raw, err := io.ReadAll(io.LimitReader(os.Stdin, maxChildRequest))
	if err != nil {
		return nil, err
	}
	var req Request
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("%s: the request on stdin is unreadable: %w", ChildCommand, err)
	}
	return &req, nil
}

// needsOverlay reports whether this process must hand the run to an overlay
// worker: an overlay was asked for, tools will run, and we are not the worker.
func (r *run) needsOverlay() bool {
	return r.req.Overlay.Path != "" && r.req.Mode != PrepareOnly && !overlay.InNamespace()
}

// runIsolated runs the whole replay again inside a private mount namespace
// with the overlay over the workspace, then commits the upper layer as asked
// and reports the changes on the worker's result.
func (r *run) runIsolated(ctx context.Context) error {
	ws, err := filepath.Abs(r.req.Overlay.Path)
	if err != nil {
		return configErr("--overlayfs-path: %v", err)
	}
	if r.req.Workspace == "" {
		r.req.Workspace = ws
	}
	if w, _ := filepath.Abs(r.req.Workspace); w != ws && !strings.HasPrefix(w, ws+string(filepath.Separator)) {
		return configErr("--workspace %s is outside --overlayfs-path %s: the tools would write past the overlay", w, ws)
	}
	mode, err := overlay.ParseCommitMode(r.req.Overlay.Commit)
	if err != nil {
		return configErr("%v", err)
	}
	cfg := overlay.Config{Path: ws, Compose: r.req.Overlay.Compose, Commit: mode}
	stateRoot, outputRoot, err := Roots(r.req.StateRoot, r.req.OutputRoot)
	if err != nil {
		return err
	}
	if err := r.checkDirs(stateRoot, outputRoot); err != nil {
		return err
	}
	// Nothing of an earlier or concurrent run with this id may be touched:
	// its layers would be committed or dropped as ours.
	if out := filepath.Join(outputRoot, r.req.RunID); exists(out) {
		return configErr("output dir %s already exists; every run needs its own (choose a new --run-id or --output-dir)", out)
	}
	stateDir := filepath.Join(stateRoot, r.req.RunID)
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fail(result.WorkspaceError, "state dir: %v", err)
	}
	lock, err := lockDir(stateDir, "overlay.lock")
	if err != nil {
		return fail(result.WorkspaceError, "%v", err)
	}
	defer lock.Close()
	layout := overlay.NewLayout(stateDir)
	if _, err := overlay.Preflight(cfg, layout); err != nil {
		return fail(result.WorkspaceError, "%v", err)
	}
	raw, err := json.Marshal(r.req)
	if err != nil {
		return fail(result.InternalError, "request: %v", err)
	}
	// The worker runs in the overlay's view of the whole tree; its state and
	// output dirs stay real (the tools' writes there do not).
	if err := os.MkdirAll(outputRoot, 0o755); err != nil {
		return fail(result.WorkspaceError, "output dir: %v", err)
	}
	var stdout bytes.Buffer
	exit, runErr := overlay.Run(ctx, cfg, layout, overlay.Options{
		Args: []string{"pvisor", ChildCommand}, Stdin: bytes.NewReader(raw), Stdout: &stdout, Stderr: os.Stderr,
		Shared: []string{stateDir, outputRoot},
	})
	report, commitErr := overlay.Commit(cfg, layout)

	// The worker's result is the run's result; the overlay adds to it.
	var child result.Result
	if line := bytes.TrimSpace(stdout.Bytes()); len(line) > 0 && json.Unmarshal(lastLine(line), &child) == nil && child.SchemaVersion != "" {
		*r.res = child
		r.outputDir = deref(child.OutputDir)
	}
	meta := map[string]any{"path": ws, "commit": string(mode), "changes": report.Changes}
	if report.Upper != "" {
		meta["upper"] = report.Upper
	}
	if len(report.Outside) > 0 {
		// Never applied: the host outside the workspace stays as it was.
		meta["outside_changes"] = report.Outside
		meta["outside_applied"] = false
		if report.OutsideUpper != "" {
			meta["outside_upper"] = report.OutsideUpper
		}
	}
	r.res.Metadata["overlayfs"] = meta
	if mode == overlay.CommitApply && len(report.Outside) > 0 && r.res.Failure == nil {
		// The workspace got the run's changes, the rest of the machine did
		// not: what was applied may not work here as it did in the replay.
		r.degradeChild(fmt.Sprintf("%d change(s) outside the workspace were not applied (see overlayfs.outside_changes; kept in %s)", len(report.Outside), report.OutsideUpper))
	}
	switch {
	case runErr != nil && r.res.Failure == nil:
		return fail(result.WorkspaceError, "%v", runErr)
	case r.res.Failure == nil && exit.Code != 0:
		return fail(result.InternalError, "overlay worker ended with status %d and no result", exit.Code)
	case commitErr != nil:
		return fail(result.WorkspaceError, "overlayfs %s: %v (the changes are still in %s)", mode, commitErr, layout.Upper)
	}
	if r.outputDir != "" {
		r.writeOutputs()
	}
	return nil
}

// degradeChild marks the worker's result degraded, keeping its reasons.
func (r *run) degradeChild(reason string) {
	if reasons, ok := r.res.Metadata["quality_reasons"].([]any); ok {
		for _, x := range reasons {
			if s, ok := x.(string); ok {
				r.degraded = append(r.degraded, s)
			}
		}
	}
	r.degrade(reason)
	if r.res.Quality == result.QualityVerified {
		r.res.Quality = result.QualityDegraded
	}
}

// lockDir takes an exclusive lock on dir/name, held until the file is
// closed.
func lockDir(dir, name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("state dir %s is in use by another pvisor run (choose a new --run-id or --state-dir)", dir)
	}
	return f, nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func lastLine(b []byte) []byte {
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
