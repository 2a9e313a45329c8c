// Package batch runs experiment batches: a matrix of replays (trajectories ×
// boundaries × repeats, with shared and per-entry settings) expanded into
// runs with stable ids, validated as a whole before anything starts, run in
// parallel child processes, resumable, and split into disjoint shards for
// cluster array jobs.
package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/workspace"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/agents"
)

// Spec is a batch file after decoding: where outputs go and the [[runs]]
// entries, each already merged with the file's [replay] defaults.
type Spec struct {
	File      string // the batch file, for messages and relative paths
	OutputDir string // absolute
	StateDir  string // absolute; empty means <OutputDir>/.batch/state
	Jobs      int    // 0 means the number of CPUs
	Shards    int    // shard count for `emit` (0: 1)
	// Workspaces is WorkspacesCopy ("" too) or WorkspacesOverlay.
	Workspaces string
	Entries    []Entry
	// Models is the model axis: every entry runs once per model (none:
	// once, with its own upstream).
	Models []Model
	// Slurm and K8s are [batch.slurm] and [batch.k8s], for 'emit'.
	Slurm SlurmOptions
	K8s   K8sOptions
}

// Entry is one [[runs]] table.
type Entry struct {
	Pos          string // "file:line" of the [[runs]] header
	Request      replay.Request
	Trajectories []string // globs, absolute or relative to the batch file
	Steps        Steps
	Workspace    string // directory or tarball copied fresh for every run; "" = none
	Repeats      int
	Model        string // the [[models]] name this copy of the entry runs ("" = none)
	Prices       *Prices
}

// Steps selects boundaries: a list, every step, or a range.
type Steps struct {
	List            []int
	All             bool
	From, To, Every int // a range when From > 0
}

// Run is one replay of the expanded matrix.
type Run struct {
	ID         string `json:"run_id"`
	Index      int    `json:"index"` // position in the expansion, the basis of sharding
	Agent      string `json:"agent"`
	Trajectory string `json:"trajectory"` // as matched, relative to the batch file when it was
	AfterStep  int    `json:"after_step"`
	Repeat     int    `json:"repeat"` // 1-based
	Workspace  string `json:"workspace,omitempty"`
	Upstream   string `json:"upstream,omitempty"`
	Model      string `json:"model,omitempty"`

	req replay.Request // settings; paths and ids are filled in by the runner
	// promptFile is the boundary prompt file as the batch file names it,
	// so run ids do not depend on where the study sits on disk.
	promptFile string
	modelName  string // the [[models]] name, part of the id
	prices     *Prices
}

// Expand turns a spec into its runs. It checks everything it can without
// running anything and returns every problem at once.
func Expand(spec *Spec) ([]*Run, []error) {
	var runs []*Run
	var errs []error
	base := filepath.Dir(spec.File)
	steps := stepCounter{}
	seen := map[string]string{}
	for _, e := range crossModels(spec) {
		where := e.Pos + ": [[runs]]"
		if e.Model != "" {
			where += " × model " + e.Model
		}
		req := e.Request
		req.AfterStep = 1 // checked per run below; Validate wants a valid one
		req.Trajectory = "x"
		if err := req.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", where, err))
			continue
		}
		if err := req.CheckPromptFile(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", where, err))
		}
		if e.Workspace != "" {
			if _, err := workspace.Kind(e.Workspace); err != nil {
				errs = append(errs, fmt.Errorf("%s: workspace: %v", where, err))
			}
		}
		if spec.Workspaces == WorkspacesOverlay && e.Request.Overlay.Path != "" {
			errs = append(errs, fmt.Errorf("%s: [overlayfs] path and [batch] workspaces = \"overlay\" both place the overlay: keep one", where))
		} else if spec.Workspaces == WorkspacesOverlay && e.Workspace != "" && e.Request.Mode != replay.PrepareOnly {
			if err := checkOverlay(e.Workspace, NewLayout(spec).State); err != nil {
				errs = append(errs, fmt.Errorf("%s: workspaces = \"overlay\": %v (or set [batch] workspaces = \"copy\")", where, err))
			}
		}
		if e.Repeats < 1 {
			errs = append(errs, fmt.Errorf("%s: repeats = %d: must be at least 1", where, e.Repeats))
			continue
		}
		if e.Repeats > maxRuns {
			errs = append(errs, tooMany(where, fmt.Sprintf("repeats = %d", e.Repeats)))
			continue
		}
		if len(e.Trajectories) == 0 {
			errs = append(errs, fmt.Errorf("%s: trajectories is empty: list the session files (globs allowed)", where))
		}
		for _, pattern := range e.Trajectories {
			abs := pattern
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(base, pattern)
			}
			matches, err := filepath.Glob(abs)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: trajectories %q: %v", where, pattern, err))
				continue
			}
			if len(matches) == 0 {
				errs = append(errs, fmt.Errorf("%s: trajectories %q matches no file (relative to %s)", where, pattern, base))
				continue
			}
			if err := checkMatches(where, pattern, len(matches), steps); err != nil {
				return nil, append(errs, err) // nothing is decoded
			}
			sort.Strings(matches)
			for _, path := range matches {
				n, err := steps.count(e.Request.Agent, path)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %s: %v", where, shown(base, path), err))
					continue
				}
				chosen, err := e.Steps.resolve(n)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %s has %d steps: %v", where, shown(base, path), n, err))
					continue
				}
				if len(runs)+len(chosen)*e.Repeats > maxRuns {
					return nil, append(errs, tooMany(where, fmt.Sprintf("%s after %d step(s) × %d repeat(s) brings it past that", shown(base, path), len(chosen), e.Repeats)))
				}
				for _, step := range chosen {
					for rep := 1; rep <= e.Repeats; rep++ {
						r := &Run{Index: len(runs), Agent: e.Request.Agent, Trajectory: shown(base, path),
							AfterStep: step, Repeat: rep, Upstream: e.Request.Upstream, Model: e.Request.UpstreamModel, req: e.Request,
							modelName: e.Model, prices: e.Prices}
						if e.Model != "" {
							r.Model = e.Model
						}
						r.req.Trajectory = path
						r.req.AfterStep = step
						if f := e.Request.BoundaryUserPromptFile; f != "" {
							r.promptFile = shown(base, f)
						}
						if e.Workspace != "" {
							r.Workspace = shown(base, e.Workspace)
							r.req.Workspace = e.Workspace
						}
						r.ID = runID(r)
						if prev, dup := seen[r.ID]; dup {
							errs = append(errs, fmt.Errorf("%s: run %s (%s after step %d, repeat %d) is also produced by %s: remove one",
								where, r.ID, r.Trajectory, step, rep, prev))
							continue
						}
						seen[r.ID] = where
						runs = append(runs, r)
					}
				}
			}
		}
	}
	return runs, errs
}

// shown is a path relative to the batch file when it lies below it: ids and
// reports stay the same wherever the study directory is mounted.
func shown(base, path string) string {
	if rel, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}

var unsafeID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]+`) })

// runID derives a run's id from everything that makes it this run: the
// same file always yields the same ids, which is what makes resuming work,
// and any changed setting yields a new run instead of reusing an old one.
func runID(r *Run) string {
	settings := r.req
	settings.Trajectory, settings.Workspace, settings.RunID = r.Trajectory, r.Workspace, ""
	settings.BoundaryUserPromptFile = r.promptFile
	settings.StateRoot, settings.OutputRoot = "", ""
	settings.AgentEntrypoint = filepath.Base(settings.AgentEntrypoint)
	key, _ := json.Marshal(struct {
		Req    replay.Request
		Repeat int
		Model  string `json:",omitempty"` // absent without [[models]]: ids stay as they were
	}{settings, r.Repeat, r.modelName})
	sum := sha256.Sum256(key)
	stem := filepath.Base(r.Trajectory)
	stem = strings.TrimSuffix(stem, filepath.Ext(stem))
	stem = strings.Trim(unsafeID().ReplaceAllString(stem, "-"), "-")
	if len(stem) > 24 {
		stem = stem[:24]
	}
	if r.modelName != "" {
		m := strings.Trim(unsafeID().ReplaceAllString(r.modelName, "-"), "-")
		if len(m) > 16 {
			m = m[:16]
		}
		stem += "-" + m
	}
	return fmt.Sprintf("%s-%s-s%d-r%d-%s", r.Agent, stem, r.AfterStep, r.Repeat, hex.EncodeToString(sum[:4]))
}

// resolve lists the boundaries for a trajectory with n steps.
func (s Steps) resolve(n int) ([]int, error) {
	if n == 0 {
		return nil, fmt.Errorf("no complete step to replay")
	}
	switch {
	case s.All:
		out := make([]int, n)
		for i := range out {
			out[i] = i + 1
		}
		return out, nil
	case s.From > 0:
		to := s.To
		if to == 0 {
			to = n
		}
		if to > n {
			return nil, fmt.Errorf("after_steps.to = %d is past the last step (use at most %d, or leave out 'to')", to, n)
		}
		var out []int
		for k := s.From; k <= to; k += s.Every {
			out = append(out, k)
		}
		return out, nil
	}
	for _, k := range s.List {
		if k > n {
			return nil, fmt.Errorf("after_steps %d is past the last step (run 'pvisor inspect' to list them)", k)
		}
	}
	return s.List, nil
}

// ParseSteps reads after_steps: a list of step numbers, "all", or a table
// {from, to, every} (to defaults to the last step, every to 1).
func ParseSteps(v any) (Steps, error) {
	switch v := v.(type) {
	case nil:
		return Steps{}, fmt.Errorf("after_steps is required: a list such as [1, 3], \"all\", or { from = 1, to = 5, every = 2 }")
	case string:
		if v == "all" {
			return Steps{All: true}, nil
		}
		return Steps{}, fmt.Errorf("after_steps = %q: the only word allowed is \"all\"", v)
	case []any:
		var s Steps
		seen := map[int]bool{}
		for _, x := range v {
			k, ok := x.(int64)
			if !ok || k < 1 {
				return Steps{}, fmt.Errorf("after_steps: %v is not a step number (steps are numbered from 1)", x)
			}
			if seen[int(k)] {
				return Steps{}, fmt.Errorf("after_steps lists %d twice", k)
			}
			seen[int(k)] = true
			s.List = append(s.List, int(k))
		}
		if len(s.List) == 0 {
			return Steps{}, fmt.Errorf("after_steps is an empty list")
		}
		return s, nil
	case map[string]any:
		s := Steps{Every: 1}
		for key, x := range v {
			k, ok := x.(int64)
			if !ok {
				return Steps{}, fmt.Errorf("after_steps.%s = %v: must be an integer", key, x)
			}
			switch key {
			case "from":
				s.From = int(k)
			case "to":
				s.To = int(k)
			case "every":
				s.Every = int(k)
			default:
				return Steps{}, fmt.Errorf("after_steps: unknown key %q (allowed: from, to, every)", key)
			}
		}
		switch {
		case s.From < 1:
			return Steps{}, fmt.Errorf("after_steps.from is required and must be at least 1")
		case s.Every < 1:
			return Steps{}, fmt.Errorf("after_steps.every must be at least 1")
		case s.To != 0 && s.To < s.From:
			return Steps{}, fmt.Errorf("after_steps.to = %d is before from = %d", s.To, s.From)
		}
		return s, nil
	}
	return Steps{}, fmt.Errorf("after_steps has type %T: use a list, \"all\" or { from, to, every }", v)
}

// stepCounter decodes each trajectory once to count its steps.
type stepCounter map[string]int

func (c stepCounter) count(agent, path string) (int, error) {
	key := agent + "\x00" + path
	if n, ok := c[key]; ok {
		return n, nil
	}
	format, ok := agents.Lookup(agent)
	if !ok {
		return 0, fmt.Errorf("unknown agent %q", agent)
	}
	// As a replay opens it: a FIFO or a device a glob matched is refused at
	// once instead of blocking the whole batch.
	f, _, err := replay.OpenTrajectory(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	t, err := format.Decode(f, trajectory.Options{SkipObservationContent: true})
	if err != nil {
		return 0, fmt.Errorf("not a %s session: %v", agent, err)
	}
	n := len(t.Steps())
	c[key] = n
	return n, nil
}
