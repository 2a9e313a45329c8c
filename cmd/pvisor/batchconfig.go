package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/batch"
)

// batchFile is the TOML form of a batch: [batch] settings, [replay] (and
// [run], [overlayfs]) defaults for every run, and [[runs]] entries, each
// of which may override any [replay] key.
type batchFile struct {
	replayFile
	Batch  *batchTable  `toml:"batch"`
	Runs   []runsEntry  `toml:"runs"`
	Models []modelEntry `toml:"models"`
}

type batchTable struct {
	OutputDir string `toml:"output_dir"`
	StateDir  string `toml:"state_dir"`
	Jobs      int    `toml:"jobs"`
	Shards    int    `toml:"shards"`
	// Workspaces: "copy" (default) or "overlay".
	Workspaces string `toml:"workspaces"`
	// Verify grades every run (a [[runs]] entry may set its own).
	Verify          string `toml:"verify"`
	VerifyTimeoutMS int    `toml:"verify_timeout_ms"`
	// Slurm and K8s are what 'batch emit' puts in the job for the cluster.
	Slurm *slurmTable `toml:"slurm"`
	K8s   *k8sTable   `toml:"k8s"`
}

type slurmTable struct {
	Time      string `toml:"time"`
	Memory    string `toml:"memory"`
	Partition string `toml:"partition"`
	Account   string `toml:"account"`
}

type k8sTable struct {
	Memory               string `toml:"memory"`
	BackoffLimitPerIndex int    `toml:"backoff_limit_per_index"`
}

type runsEntry struct {
	replayTable
	Trajectories []string `toml:"trajectories"`
	AfterSteps   any      `toml:"after_steps"`
	Repeats      *int     `toml:"repeats"`
	// Verify and VerifyTimeoutMS override [batch]'s for this entry;
	// verify = "" turns grading off for it.
	Verify          string `toml:"verify"`
	VerifyTimeoutMS int    `toml:"verify_timeout_ms"`
}

const batchTables = "[batch], [batch.slurm], [batch.k8s], [replay], [run], [overlayfs], [overlaynet], [[runs]], [[models]]; see 'pvisor batch --help'"

// loadBatch reads a batch file. Every problem is returned, not just the
// first: a study file is fixed in one go.
func loadBatch(path string) (*batch.Spec, []error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, []error{err}
	}
	data, err := readConfigFile(abs)
	if err != nil {
		return nil, []error{fmt.Errorf("%v (give the batch TOML file)", err)}
	}
	var cfg batchFile
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, []error{tomlError(path, err, batchTables)}
	}
	// Which keys each [[runs]] sets, to tell an override from a zero value.
	var raw struct {
		Runs []map[string]any `toml:"runs"`
	}
	if err := toml.Unmarshal(data, &raw); err != nil {
		return nil, []error{tomlError(path, err, batchTables)}
	}
	var errs []error
	bt := cfg.Batch
	if bt == nil {
		bt = &batchTable{}
	}
	rel := relativeTo(filepath.Dir(abs))
	spec := &batch.Spec{File: abs, OutputDir: rel(bt.OutputDir), StateDir: rel(bt.StateDir), Jobs: bt.Jobs, Shards: bt.Shards,
		Workspaces: bt.Workspaces}
	switch bt.Workspaces {
	case "", batch.WorkspacesCopy, batch.WorkspacesOverlay:
	default:
		errs = append(errs, fmt.Errorf("%s:%d: [batch] workspaces = %q: use \"copy\" or \"overlay\"", path, keyLine(data, "[batch]", "workspaces"), bt.Workspaces))
	}
	if t := bt.Slurm; t != nil {
		spec.Slurm = batch.SlurmOptions{Time: t.Time, Memory: t.Memory, Partition: t.Partition, Account: t.Account}
		for _, err := range spec.Slurm.Check() {
			errs = append(errs, fmt.Errorf("%s:%d: %v", path, keyLine(data, "[batch.slurm]", ""), err))
		}
	}
	if t := bt.K8s; t != nil {
		spec.K8s = batch.K8sOptions{Memory: t.Memory, BackoffLimitPerIndex: t.BackoffLimitPerIndex}
		for _, err := range spec.K8s.Check() {
			errs = append(errs, fmt.Errorf("%s:%d: %v", path, keyLine(data, "[batch.k8s]", ""), err))
		}
	}
	if bt.OutputDir == "" {
		errs = append(errs, fmt.Errorf("%s: [batch] output_dir is required (relative to the file)", path))
	}
	if bt.Jobs < 0 || bt.Shards < 0 {
		errs = append(errs, fmt.Errorf("%s: [batch] jobs and shards must be positive", path))
	}
	defaults := replayTable{}
	if cfg.Replay != nil {
		defaults = *cfg.Replay
		for key, set := range map[string]bool{"run_id": defaults.RunID != "", "output_dir": defaults.OutputDir != "", "state_dir": defaults.StateDir != ""} {
			if set {
				errs = append(errs, fmt.Errorf("%s:%d: [replay] %s has no meaning in a batch (run ids are derived per run; directories come from [batch])", path, keyLine(data, "[replay]", key), key))
			}
		}
	}
	if len(cfg.Runs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no [[runs]] table: nothing to run", path))
	}
	var more []error
	spec.Models, more = loadModels(path, data, cfg.Models)
	errs = append(errs, more...)
	lines := headerLines(data, "[[runs]]")
	for i, e := range cfg.Runs {
		pos := fmt.Sprintf("%s:%d", path, lineAt(lines, i))
		merged := defaults
		for key := range raw.Runs[i] {
			if (key == "upstream" || key == "upstream_model") && len(cfg.Models) > 0 {
				errs = append(errs, fmt.Errorf("%s: [[runs]] %s and [[models]] both choose the model: with [[models]], each run gets its model's upstream", pos, key))
			}
			overrideKey(&merged, &e.replayTable, key)
			if key == "run_id" || key == "output_dir" || key == "state_dir" {
				errs = append(errs, fmt.Errorf("%s: [[runs]] %s has no meaning in a batch (run ids are derived per run; directories come from [batch])", pos, key))
			}
		}
		trajs := e.Trajectories
		if merged.Trajectory != "" {
			trajs = append(trajs, merged.Trajectory)
		}
		var steps batch.Steps
		var err error
		if e.AfterSteps == nil && merged.AfterStep > 0 {
			steps = batch.Steps{List: []int{merged.AfterStep}}
		} else if steps, err = batch.ParseSteps(e.AfterSteps); err != nil {
			errs = append(errs, fmt.Errorf("%s: [[runs]] %v", pos, err))
		}
		ws := merged.Workspace
		merged.Workspace, merged.Trajectory, merged.AfterStep = "", "", 0
		f := cfg.replayFile
		f.Replay = &merged
		req, err := f.request(abs)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: [[runs]] %v", pos, err))
			continue
		}
		req.Verify, req.VerifyTimeout = bt.Verify, time.Duration(bt.VerifyTimeoutMS)*time.Millisecond
		if _, set := raw.Runs[i]["verify"]; set {
			req.Verify = e.Verify
		}
		if _, set := raw.Runs[i]["verify_timeout_ms"]; set {
			req.VerifyTimeout = time.Duration(e.VerifyTimeoutMS) * time.Millisecond
		}
		if req.Verify != "" && req.Mode == replay.PrepareOnly {
			errs = append(errs, fmt.Errorf("%s: [[runs]] verify needs a workspace that tools ran in: a prepare_only run has none (drop verify, or prepare_only)", pos))
		}
		if req.VerifyTimeout < 0 {
			errs = append(errs, fmt.Errorf("%s: [[runs]] verify_timeout_ms must be positive (or unset for %s)", pos, replay.DefaultVerifyTimeout))
			continue
		}
		repeats := 1
		if e.Repeats != nil {
			repeats = *e.Repeats
		}
		if ws == "" && req.Mode != replay.PrepareOnly {
			errs = append(errs, fmt.Errorf("%s: [[runs]] workspace is required when tools run (a directory or .tar.gz copied fresh for every run), or set prepare_only = true", pos))
		}
		spec.Entries = append(spec.Entries, batch.Entry{Pos: pos, Request: *req, Trajectories: trajs,
			Steps: steps, Workspace: rel(ws), Repeats: repeats})
	}
	return spec, errs
}

// overrideKey copies the field tagged key from src to dst.
func overrideKey(dst, src *replayTable, key string) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := range d.NumField() {
		if d.Type().Field(i).Tag.Get("toml") == key {
			d.Field(i).Set(s.Field(i))
		}
	}
}

// headerLines lists the 1-based lines on which header starts a table.
func headerLines(data []byte, header string) []int {
	var out []int
	for i, l := range bytes.Split(data, []byte("\n")) {
		if strings.HasPrefix(strings.TrimSpace(string(l)), header) {
			out = append(out, i+1)
		}
	}
	return out
}

// keyLine is the line of key inside table (the table's own line if the key
// is not found on a line of its own).
func keyLine(data []byte, table, key string) int {
	in, at := false, 0
	for i, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			in = strings.HasPrefix(t, table)
			if in {
				at = i + 1
			}
			continue
		}
		if k, _, ok := strings.Cut(t, "="); in && ok && strings.TrimSpace(k) == key {
			return i + 1
		}
	}
	return at
}

func lineAt(lines []int, i int) int {
	if i < len(lines) {
		return lines[i]
	}
	return 0
}

// joinErrors prints one problem per line.
func joinErrors(errs []error) error { return errors.Join(errs...) }
