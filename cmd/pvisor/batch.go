package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/pvisor/pvisor/replay/batch"
	"github.com/pvisor/pvisor/replay/batch/report"
	"github.com/pvisor/pvisor/result"
)

const batchUsage = `Usage:
    pvisor batch run FILE.toml [--jobs N] [--shard I/N] [--output-dir DIR] [--dry-run] [--events FILE]
    pvisor batch report DIR... [--out DIR]
    pvisor batch emit slurm|k8s FILE.toml

Runs an experiment matrix: every [[runs]] entry expands to trajectories ×
after_steps × repeats, each run a replay with the file's [replay] settings
and the entry's overrides, in its own fresh copy of the workspace. Paths in
the file are relative to it. Run ids come from the parameters, so running
the same file again skips what finished and redoes what was interrupted.

    [batch]
    output_dir = "out"
    jobs = 2
    # workspaces = "overlay"   # root: a per-run upper over a shared lower, no copy
    # shards = 4               # tasks for 'emit' (default: one per jobs runs) and JOB_COMPLETION_INDEX
    # verify = "make test"     # grades each run in its workspace: pass (exit 0), fail or error
    # verify_timeout_ms = 600000

    # [batch.slurm]            # for 'emit slurm': time = "2:00:00", memory = "8G", partition, account
    # [batch.k8s]              # for 'emit k8s': memory = "8Gi", backoff_limit_per_index = 2

    [replay]                   # defaults: any key of a replay --config [replay]
    upstream = "recorded"
    max_steps = 30

    [[runs]]
    agent = "{example-agent}"
    trajectories = ["sessions/*.jsonl"]
    after_steps = [1, 3]       # or "all", or { from = 1, to = 5, every = 2 }
    workspace = "repo.tar.gz"  # a directory or tarball
    repeats = 1
    # verify = "pytest -q"     # this entry's own (verify = "" for none)

    [[models]]                 # optional: every [[runs]] entry once per model
    name = "fast"              # the label in run ids, records and reports
    upstream = "openai-chat"
    model = "qwen3-coder"
    base_url = "http://127.0.0.1:8765/v1"
    key_env = "FAST_KEY"       # the variable holding the key, never the key
    # price_input = 0.5        # per million tokens: the report's cost column
    # price_output = 2.0

Everything is checked before anything runs; all problems are listed, exit 2.
stdout gets each run's result line as it ends, then the batch's own line.

Flags of run:
`

func cmdBatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			batchHelp(batchRunFlags(&batchRunOpts{}), stderr)
			return batchFail(stdout, stderr, fmt.Errorf("missing subcommand: run, report or emit"))
		}
		return batchHelp(batchRunFlags(&batchRunOpts{}), stdout)
	}
	switch args[0] {
	case "run":
		return cmdBatchRun(args[1:], stdout, stderr)
	case "report":
		return cmdBatchReport(args[1:], stdout, stderr)
	case "emit":
		return cmdBatchEmit(args[1:], stdout, stderr)
	}
	return batchFail(stdout, stderr, fmt.Errorf("unknown subcommand %q: use run, report or emit (see 'pvisor batch --help')", args[0]))
}

// batchHelp prints the usage and the subcommand's flags to w.
func batchHelp(fs *pflag.FlagSet, w io.Writer) int {
	printHelp(w, strings.Replace(batchUsage, "Flags of run:", "Flags of "+fs.Name()+":", 1), fs)
	return 0
}

// batchFail ends a batch command that could not start: the v3 line on
// stdout, the reason on stderr, exit 2.
func batchFail(stdout, stderr io.Writer, err error) int {
	res := result.New("", "")
	res.Fail(result.ConfigurationError, err.Error())
	stdout.Write(res.Line())
	fmt.Fprintf(stderr, "pvisor batch: %v\n", err)
	return 2
}

type batchRunOpts struct {
	jobs, shards     int
	shard, out, evts string
	dryRun           bool
}

func batchRunFlags(o *batchRunOpts) *pflag.FlagSet {
	fs := pflag.NewFlagSet("batch run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	decimalVar(fs, &o.jobs, "jobs", 0, "runs at a time (default: [batch] jobs, else the number of CPUs)")
	fs.StringVar(&o.shard, "shard", "", "run only share `I/N` (default: from SLURM_ARRAY_TASK_ID/COUNT or JOB_COMPLETION_INDEX)")
	decimalVar(fs, &o.shards, "shards", 0, "shard count N for JOB_COMPLETION_INDEX (default: [batch] shards)")
	fs.StringVar(&o.out, "output-dir", "", "output `dir` (default: [batch] output_dir, relative to the file)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "list the runs and whether they are done; run nothing")
	fs.StringVar(&o.evts, "events", "", "append JSONL progress events to `file`")
	return fs
}

func cmdBatchRun(args []string, stdout, stderr io.Writer) int {
	var o batchRunOpts
	fs := batchRunFlags(&o)
	if err := fs.Parse(args); err == pflag.ErrHelp {
		return batchHelp(fs, stdout)
	} else if err != nil {
		return batchFail(stdout, stderr, fmt.Errorf("%v (see 'pvisor batch --help')", flagError(fs, err)))
	}
	if fs.NArg() != 1 {
		return batchFail(stdout, stderr, fmt.Errorf("batch run takes one FILE.toml, got %d arguments", fs.NArg()))
	}
	spec, errs := loadBatch(fs.Arg(0))
	if spec != nil && o.out != "" {
		abs, err := filepath.Abs(o.out)
		if err != nil {
			errs = append(errs, err)
		}
		spec.OutputDir = abs
	}
	if o.jobs < 0 {
		errs = append(errs, fmt.Errorf("--jobs %d: must be at least 1", o.jobs))
	}
	var runs []*batch.Run
	if spec != nil {
		var more []error
		runs, more = batch.Expand(spec)
		errs = append(errs, more...)
	}
	shard, err := chooseShard(o, spec)
	if err != nil {
		errs = append(errs, err)
	} else if spec != nil {
		// The CLIs this shard's unfinished runs continue: present and
		// executable, and (not for --dry-run, which starts nothing) each
		// that agent's.
		var pending []*batch.Run
		for _, r := range shard.Select(runs) {
			if _, done := batch.ReadRecord(filepath.Join(batch.RecordsDir(spec.OutputDir), r.ID+".json")); !done {
				pending = append(pending, r)
			}
		}
		errs = append(errs, batch.CheckEntrypoints(context.Background(), pending, !o.dryRun)...)
		errs = append(errs, batch.CheckKeys(pending, os.Getenv)...)
	}
	if len(errs) > 0 {
		return batchFail(stdout, stderr, fmt.Errorf("%d problem(s), nothing was started:\n%v", len(errs), joinErrors(errs)))
	}
	layout := batch.NewLayout(spec)
	id := batchID(spec, shard)
	if o.dryRun {
		for _, r := range shard.Select(runs) {
			state := "pending"
			if _, done := batch.ReadRecord(filepath.Join(batch.RecordsDir(layout.Out), r.ID+".json")); done {
				state = "done"
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\tafter_step=%d\trepeat=%d\t%s\n", r.ID, r.Agent, r.Trajectory, r.AfterStep, r.Repeat, state)
		}
		res := (&batch.Summary{Total: len(shard.Select(runs)), PvisorVersion: version}).Result(id, layout, shard)
		res.Metadata["dry_run"] = true
		stdout.Write(res.Line())
		return 0
	}
	self, err := os.Executable()
	if err != nil {
		return batchFail(stdout, stderr, fmt.Errorf("find the pvisor binary to run replays: %v", err))
	}
	opt := batch.Options{Jobs: o.jobs, Shard: shard, Exec: batch.Child{Path: self}, Stdout: stdout,
		Progress: stderr, Live: isTerminal(stderr), Workspaces: spec.Workspaces, PvisorVersion: version}
	if opt.Jobs == 0 {
		opt.Jobs = spec.Jobs
	}
	if o.evts != "" {
		f, err := os.OpenFile(o.evts, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return batchFail(stdout, stderr, fmt.Errorf("--events: %v", err))
		}
		defer f.Close()
		opt.Events = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := batch.Execute(ctx, runs, layout, opt)
	if err != nil {
		res := result.New(id, "")
		res.Fail(result.WorkspaceError, err.Error())
		stdout.Write(res.Line())
		fmt.Fprintf(stderr, "pvisor batch: %v\n", err)
		return result.ExitCode(res.Failure)
	}
	res := sum.Result(id, layout, shard)
	stdout.Write(res.Line())
	if res.Failure != nil {
		fmt.Fprintf(stderr, "pvisor batch: %s\n", res.Failure.Message)
	}
	return result.ExitCode(res.Failure)
}

// chooseShard: --shard wins, then the cluster engine's environment.
func chooseShard(o batchRunOpts, spec *batch.Spec) (batch.Shard, error) {
	if o.shard != "" {
		return batch.ParseShard(o.shard)
	}
	n := o.shards
	if n == 0 && spec != nil {
		n = spec.Shards
	}
	s, _, err := batch.ShardFromEnv(os.Getenv, n)
	return s, err
}

// batchID names the batch's own result line: the file and the shard.
func batchID(spec *batch.Spec, shard batch.Shard) string {
	sum := sha256.Sum256([]byte(spec.File + "\x00" + spec.OutputDir))
	id := "batch-" + hex.EncodeToString(sum[:4])
	if shard.N > 1 {
		id += fmt.Sprintf("-shard%dof%d", shard.I, shard.N)
	}
	return id
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// cmdBatchChild is one run of a batch, started by 'batch run'.
func cmdBatchChild(stdout, stderr io.Writer) int {
	return batch.ChildMain(os.Stdin, stdout, stderr)
}

func cmdBatchReport(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("batch report", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "", "write report.json, report.md and report.html to `dir` (default: the first DIR)")
	if err := fs.Parse(args); err == pflag.ErrHelp {
		return batchHelp(fs, stdout)
	} else if err != nil {
		return batchFail(stdout, stderr, fmt.Errorf("%v (see 'pvisor batch --help')", flagError(fs, err)))
	}
	if fs.NArg() == 0 {
		return batchFail(stdout, stderr, fmt.Errorf("batch report needs at least one batch output DIR"))
	}
	rep, err := report.Build(fs.Args())
	if err != nil {
		return batchFail(stdout, stderr, err)
	}
	rep.PvisorVersion = version
	dir := *out
	if dir == "" {
		dir = fs.Arg(0)
	}
	res := result.New("batch-report", "")
	res.OutputDir = &dir
	if err := report.Write(rep, dir); err != nil {
		res.Fail(result.WorkspaceError, fmt.Sprintf("write the report: %v", err))
		stdout.Write(res.Line())
		fmt.Fprintf(stderr, "pvisor batch report: %v\n", err)
		return result.ExitCode(res.Failure)
	}
	for _, name := range []string{"report.json", "report.md", "report.html"} {
		res.Artifacts = append(res.Artifacts, result.Artifact{Role: "batch_report", Format: report.SchemaVersion, Path: filepath.Join(dir, name)})
	}
	res.Metadata["batch_report"] = map[string]any{"runs": len(rep.Runs), "groups": len(rep.Groups), "pvisor_version": version}
	res.Quality = result.QualityVerified
	if line := rep.SkippedLine(); line != "" {
		res.Metadata["batch_report"].(map[string]any)["skipped_records"] = len(rep.Skipped)
		res.Quality = result.QualityDegraded // a run may be missing from the figures
		fmt.Fprintf(stderr, "pvisor batch report: warning: %s\n", line)
	}
	fmt.Fprintf(stderr, "pvisor batch report: %d runs in %d groups: %s\n", len(rep.Runs), len(rep.Groups), filepath.Join(dir, "report.html"))
	stdout.Write(res.Line())
	return 0
}

func cmdBatchEmit(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("batch emit", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	shards, jobs := new(int), new(int)
	decimalVar(fs, shards, "shards", 0, "number of array tasks / pods `N` (default: [batch] shards)")
	decimalVar(fs, jobs, "jobs", 0, "runs at a time per task (default: [batch] jobs, else 1)")
	out := fs.String("out", "", "write the job to `file` ('-' prints it alone on stdout; default <output_dir>/.batch/slurm.sh or k8s-job.yaml)")
	pvisor := fs.String("pvisor", "", "pvisor `path` on the nodes (default: this binary for slurm, \"pvisor\" for k8s)")
	image := fs.String("image", "pvisor:latest", "container `image` with pvisor and the agent CLIs (k8s)")
	claim := fs.String("claim", "pvisor-study", "PersistentVolumeClaim `name` holding the study dir, mounted at /study (k8s)")
	if err := fs.Parse(args); err == pflag.ErrHelp {
		return batchHelp(fs, stdout)
	} else if err != nil {
		return batchFail(stdout, stderr, fmt.Errorf("%v (see 'pvisor batch --help')", flagError(fs, err)))
	}
	if fs.NArg() != 2 || (fs.Arg(0) != "slurm" && fs.Arg(0) != "k8s") {
		return batchFail(stdout, stderr, fmt.Errorf("usage: pvisor batch emit slurm|k8s FILE.toml"))
	}
	kind := fs.Arg(0)
	spec, errs := loadBatch(fs.Arg(1))
	var runs []*batch.Run
	if spec != nil {
		var more []error
		runs, more = batch.Expand(spec)
		errs = append(errs, more...)
	}
	if len(errs) > 0 {
		return batchFail(stdout, stderr, fmt.Errorf("%d problem(s) in the batch file:\n%v", len(errs), joinErrors(errs)))
	}
	job := batch.ClusterJob{File: spec.File, Out: spec.OutputDir, Shards: *shards, Jobs: *jobs, Pvisor: *pvisor, Image: *image, Claim: *claim,
		Slurm: spec.Slurm, K8s: spec.K8s}
	if job.Shards == 0 {
		job.Shards = spec.Shards
	}
	if job.Jobs == 0 {
		job.Jobs = max(spec.Jobs, 1)
	}
	if job.Shards < 1 {
		job.Shards = batch.DefaultShards(len(runs), job.Jobs)
		fmt.Fprintf(stderr, "pvisor batch emit: no [batch] shards in the file and no --shards: %d tasks, one per %d of the %d runs (set shards to choose)\n",
			job.Shards, job.Jobs, len(runs))
	}
	if outside := batch.OutsideStudy(spec, runs); kind == "k8s" && len(outside) > 0 {
		fmt.Fprintf(stderr, "pvisor batch emit: warning: %d path(s) lie outside the study dir %s, which is all the Job mounts (at /study): move them into it, or the pods will not find them:\n",
			len(outside), filepath.Dir(spec.File))
		for i, p := range outside {
			if i == 10 {
				fmt.Fprintf(stderr, "    … and %d more\n", len(outside)-10)
				break
			}
			fmt.Fprintf(stderr, "    %s\n", p)
		}
	}
	name := "slurm.sh"
	switch {
	case kind == "k8s":
		name = "k8s-job.yaml"
		if job.Pvisor == "" {
			job.Pvisor = "pvisor"
		}
	case job.Pvisor == "":
		self, err := os.Executable()
		if err != nil {
			return batchFail(stdout, stderr, fmt.Errorf("find this binary (pass --pvisor PATH): %v", err))
		}
		job.Pvisor = self
	}
	text := job.SlurmScript
	if kind == "k8s" {
		text = job.Kubernetes
	}
	if *out == "-" {
		fmt.Fprint(stdout, text())
		return 0
	}
	path := *out
	if path == "" {
		path = filepath.Join(spec.OutputDir, ".batch", name)
	}
	res := result.New(batchID(spec, batch.Shard{}), "")
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = os.WriteFile(path, []byte(text()), 0o644)
	}
	if err != nil {
		res.Fail(result.WorkspaceError, fmt.Sprintf("write %s: %v", path, err))
		stdout.Write(res.Line())
		return result.ExitCode(res.Failure)
	}
	res.Quality = result.QualityVerified
	res.Artifacts = append(res.Artifacts, result.Artifact{Role: "batch_" + kind + "_job", Format: name, Path: path})
	stdout.Write(res.Line())
	submit := "sbatch " + path
	if kind == "k8s" {
		submit = "kubectl apply -f " + path
	}
	fmt.Fprintf(stderr, "pvisor batch emit: wrote %s (%d tasks); submit with: %s\n", path, job.Shards, submit)
	return 0
}
