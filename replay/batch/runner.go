package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/workspace"
	"github.com/pvisor/pvisor/result"
)

// Layout of a batch output directory. Replays write <out>/<run_id>/ as a
// single `pvisor replay --output-dir <out>` would; the batch's own files
// live under <out>/.batch/, one file per run, so shards sharing the
// directory never write the same file.
type Layout struct{ Out, State string }

// NewLayout returns the layout of a spec's output directory.
func NewLayout(spec *Spec) Layout {
	l := Layout{Out: spec.OutputDir, State: spec.StateDir}
	if l.State == "" {
		l.State = filepath.Join(l.Out, ".batch", "state")
	}
	return l
}

// RecordsDir holds one <run_id>.json per finished run.
func RecordsDir(out string) string { return filepath.Join(out, ".batch", "runs") }

func (l Layout) record(id string) string { return filepath.Join(RecordsDir(l.Out), id+".json") }
func (l Layout) work(id string) string   { return filepath.Join(l.Out, ".batch", "work", id) }
func (l Layout) log(id string) string    { return filepath.Join(l.Out, ".batch", "logs", id+".log") }

// Record is what the batch keeps of a finished run: its parameters, exit
// code, wall time and result. Its presence marks the run done.
type Record struct {
	RunID      string          `json:"run_id"`
	Agent      string          `json:"agent"`
	Trajectory string          `json:"trajectory"`
	AfterStep  int             `json:"after_step"`
	Repeat     int             `json:"repeat"`
	Upstream   string          `json:"upstream,omitempty"`
	Model      string          `json:"model,omitempty"`
	ExitCode   int             `json:"exit_code"`
	WallMS     int64           `json:"wall_ms"`
	Result     json.RawMessage `json:"result"`
	// PvisorVersion is the pvisor that ran the batch (main.version).
	PvisorVersion string `json:"pvisor_version,omitempty"`
	// Prices are the run's model's, when the study gave them.
	Prices *Prices `json:"prices,omitempty"`
}

// ReadRecord reads a run record; ok is false when there is none (yet).
func ReadRecord(path string) (*Record, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var rec Record
	if json.Unmarshal(data, &rec) != nil || rec.RunID == "" || len(rec.Result) == 0 {
		return nil, false
	}
	return &rec, true
}

// Options control one `batch run`.
type Options struct {
	Jobs       int
	Shard      Shard
	Exec       Executor
	Stdout     io.Writer // each run's result line, as it ends
	Progress   io.Writer // human progress (stderr)
	Live       bool      // Progress is a terminal: one redrawn line
	Events     io.Writer // JSONL events for machines; nil for none
	Workspaces string    // WorkspacesCopy (default) or WorkspacesOverlay
	// PvisorVersion is stamped into every record and the batch's line.
	PvisorVersion string
}

// Summary counts what a batch did.
type Summary struct {
	Total, Skipped, Ran, Failed, Interrupted int
	FirstFailure                             *Record // in expansion order
	firstFailure                             int     // its index
	// InterruptedRuns are the runs a signal left unfinished (stopped while
	// running, or never started), in expansion order: no record, so the
	// next attempt redoes them.
	InterruptedRuns []string
	interrupted     []*Run
	PvisorVersion   string // from Options
}

// Execute runs this shard's share of runs. Runs with a record are skipped;
// any other run starts from scratch (its leftovers from an interrupted
// attempt are removed first). When ctx ends, no new run starts and the
// running ones are stopped; they keep no record, so the next attempt redoes
// them.
func Execute(ctx context.Context, runs []*Run, layout Layout, opt Options) (*Summary, error) {
	mine := opt.Shard.Select(runs)
	lock, err := LockOutput(layout.Out, opt.Shard)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	for _, d := range []string{RecordsDir(layout.Out), filepath.Dir(layout.work("x")), filepath.Dir(layout.log("x")), layout.State} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("output dir: %v", err)
		}
	}
	sum := &Summary{Total: len(mine), PvisorVersion: opt.PvisorVersion}
	var todo []*Run
	for _, r := range mine {
		if _, done := ReadRecord(layout.record(r.ID)); done {
			sum.Skipped++
			continue
		}
		todo = append(todo, r)
	}
	jobs := opt.Jobs
	if jobs < 1 {
		jobs = runtime.NumCPU()
	}
	p := newProgress(opt.Progress, opt.Live, sum.Total, sum.Skipped)
	ev := &events{w: opt.Events}
	ev.emit(map[string]any{"event": "batch_started", "runs": sum.Total, "skipped": sum.Skipped, "jobs": jobs,
		"shard": opt.Shard.String()})
	defer p.stop()

	var mu sync.Mutex // guards sum and Stdout
	queue := make(chan *Run)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range queue {
				p.started(r.ID)
				ev.emit(map[string]any{"event": "run_started", "run_id": r.ID})
				rec, line, interrupted := runOne(ctx, r, layout, opt)
				mu.Lock()
				if len(line) > 0 {
					opt.Stdout.Write(append(line, '\n'))
				}
				switch {
				case interrupted:
					sum.Interrupted++
					sum.interrupted = append(sum.interrupted, r)
				default:
					sum.Ran++
					if rec.ExitCode != 0 {
						sum.Failed++
						if sum.FirstFailure == nil || r.Index < sum.firstFailure {
							sum.FirstFailure, sum.firstFailure = rec, r.Index
						}
					}
				}
				mu.Unlock()
				p.finished(r.ID, rec, interrupted)
				ev.emit(map[string]any{"event": "run_finished", "run_id": r.ID, "exit_code": rec.ExitCode,
					"wall_ms": rec.WallMS, "interrupted": interrupted})
			}
		}()
	}
	fed := 0
feed:
	for _, r := range todo {
		select {
		case queue <- r:
			fed++
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	if ctx.Err() != nil {
		sum.interrupted = append(sum.interrupted, todo[fed:]...)
		sum.Interrupted = len(sum.interrupted)
		sort.Slice(sum.interrupted, func(i, j int) bool { return sum.interrupted[i].Index < sum.interrupted[j].Index })
		for _, r := range sum.interrupted {
			sum.InterruptedRuns = append(sum.InterruptedRuns, r.ID)
		}
	}
	fin := map[string]any{"event": "batch_finished", "ran": sum.Ran, "failed": sum.Failed,
		"skipped": sum.Skipped, "interrupted": sum.Interrupted}
	if len(sum.InterruptedRuns) > 0 {
		fin["interrupted_runs"] = sum.InterruptedRuns
	}
	ev.emit(fin)
	return sum, ev.err
}

// runOne runs r from scratch and records it unless it was interrupted.
func runOne(ctx context.Context, r *Run, l Layout, opt Options) (*Record, []byte, bool) {
	start := time.Now()
	rec := &Record{RunID: r.ID, Agent: r.Agent, Trajectory: r.Trajectory, AfterStep: r.AfterStep,
		Repeat: r.Repeat, Upstream: r.Upstream, Model: r.Model, PvisorVersion: opt.PvisorVersion, Prices: r.prices}
	req := r.req
	req.RunID, req.StateRoot, req.OutputRoot = r.ID, l.State, l.Out
	// A study compares what continuations did, so every one leaves its
	// diff (not part of the run id: it changes nothing the run does).
	req.WorkspaceDiff = req.Mode == replay.Continue
	res := (*result.Result)(nil)
	var line []byte
	err := cleanLeftovers(r.ID, l)
	// Prepare-only runs no tool, so it needs no workspace of its own.
	switch {
	case err != nil || req.Workspace == "" || req.Mode == replay.PrepareOnly:
	case opt.Workspaces == WorkspacesOverlay:
		err = overlayWorkspace(&req, r.req.Workspace, l)
	default:
		req.Workspace = l.work(r.ID)
		err = workspace.Fresh(r.req.Workspace, req.Workspace)
	}
	if err != nil {
		res = result.New(r.ID, r.Agent)
		res.Fail(result.WorkspaceError, fmt.Sprintf("prepare the run's workspace: %v", err))
	} else {
		line, res = execute(ctx, r, &req, l, opt)
	}
	if len(line) == 0 {
		line = bytesTrim(res.Line())
	}
	rec.ExitCode = result.ExitCode(res.Failure)
	rec.WallMS = time.Since(start).Milliseconds()
	rec.Result = line
	if ctx.Err() != nil {
		return rec, line, true
	}
	if err := result.WriteJSON(l.record(r.ID), rec); err != nil {
		fmt.Fprintf(opt.Progress, "batch: %s: cannot record the run (%v); it will run again next time\n", r.ID, err)
	}
	return rec, line, false
}

func execute(ctx context.Context, r *Run, req *replay.Request, l Layout, opt Options) ([]byte, *result.Result) {
	logf, err := os.Create(l.log(r.ID))
	if err != nil {
		res := result.New(r.ID, r.Agent)
		res.Fail(result.WorkspaceError, fmt.Sprintf("run log: %v", err))
		return nil, res
	}
	defer logf.Close()
	line, err := opt.Exec.Exec(ctx, req, logf)
	var res result.Result
	if err == nil {
		err = json.Unmarshal(line, &res)
		if err == nil && res.SchemaVersion != result.SchemaVersion {
			err = fmt.Errorf("result line has schema %q", res.SchemaVersion)
		}
	}
	if err != nil {
		out := result.New(r.ID, r.Agent)
		out.Fail(result.InternalError, fmt.Sprintf("the replay process gave no result (%v); see %s", err, l.log(r.ID)))
		return nil, out
	}
	return line, &res
}

// cleanLeftovers removes what an interrupted attempt may have left, so a
// redone run starts in a fresh workspace with fresh state.
func cleanLeftovers(id string, l Layout) error {
	for _, d := range []string{filepath.Join(l.Out, id), filepath.Join(l.State, id), l.work(id)} {
		if err := os.RemoveAll(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func bytesTrim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// events writes JSONL events, one line per call, never interleaved.
type events struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (e *events) emit(ev map[string]any) {
	if e.w == nil {
		return
	}
	ev["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	data, _ := json.Marshal(ev)
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.w.Write(append(data, '\n')); err != nil && e.err == nil {
		e.err = fmt.Errorf("--events: %v", err)
	}
}

// Result is the batch's own result/v3 line, printed last: success when
// every run of this shard ended with exit 0, otherwise the first failed
// run's category (so the exit code says what kind of failure to look at).
func (s *Summary) Result(id string, l Layout, shard Shard) *result.Result {
	res := result.New(id, "")
	meta := map[string]any{"runs": s.Total, "skipped": s.Skipped, "ran": s.Ran,
		"failed": s.Failed, "interrupted": s.Interrupted, "output_dir": l.Out, "shard": shard.String()}
	if len(s.InterruptedRuns) > 0 {
		meta["interrupted_runs"] = s.InterruptedRuns
	}
	if s.PvisorVersion != "" {
		meta["pvisor_version"] = s.PvisorVersion
	}
	res.Metadata["batch"] = meta
	res.OutputDir = &l.Out
	switch {
	case s.Interrupted > 0:
		res.Fail(result.Interrupted, fmt.Sprintf("interrupted: %d of %d runs did not finish (metadata.batch.interrupted_runs); run the same command again to resume them", s.Interrupted, s.Total))
	case s.FirstFailure != nil:
		var first result.Result
		category := result.InternalError
		if json.Unmarshal(s.FirstFailure.Result, &first) == nil && first.Failure != nil {
			category = first.Failure.Category
		}
		res.Fail(category, fmt.Sprintf("%d of %d runs failed, first %s (see %s)", s.Failed, s.Total, s.FirstFailure.RunID, RecordsDir(l.Out)))
	default:
		res.Quality = result.QualityVerified
	}
	return res
}
