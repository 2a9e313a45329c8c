package batch

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// ClusterJob describes the array job that runs a batch in Shards shares.
type ClusterJob struct {
	File   string // the batch file, absolute
	Out    string // the shared output dir, absolute
	Shards int
	Jobs   int    // runs at a time inside one task (CPUs per task)
	Pvisor string // the pvisor binary on the nodes
	Image  string // container image (k8s)
	Claim  string // PersistentVolumeClaim holding the study dir (k8s)
	Slurm  SlurmOptions
	K8s    K8sOptions
}

// SlurmOptions are [batch.slurm]: what the cluster needs to place a task.
// Each is checked against Slurm's own syntax (CheckSlurm), so nothing a
// study file holds can add a line to the script.
type SlurmOptions struct {
	Time      string // --time: "MM", "HH:MM:SS", "D-HH:MM", …
	Memory    string // --mem per task: "8G", "16000M"
	Partition string // --partition (a comma list allowed)
	Account   string // --account
}

// K8sOptions are [batch.k8s]: each pod's memory (request and limit) and
// how often one index is retried.
type K8sOptions struct {
	Memory               string // "8Gi"; "" for none
	BackoffLimitPerIndex int    // backoffLimitPerIndex (0: 2)
}

// Compiled on first use: the bounded repetitions expand to ~460 KB of
// program, which as package init every pvisor process (each batch child,
// `pvisor --version`) paid at start, about a millisecond.
var (
	slurmTime    = lazyRegexp(`^([0-9]+-)?[0-9]{1,4}(:[0-9]{2}){0,2}$|^UNLIMITED$`)
	slurmMemory  = lazyRegexp(`^[0-9]{1,9}[KMGT]?$`)
	slurmName    = lazyRegexp(`^[A-Za-z0-9_.-]{1,64}(,[A-Za-z0-9_.-]{1,64}){0,15}$`)
	k8sQuantity  = lazyRegexp(`^[0-9]{1,9}(\.[0-9]{1,3})?(Ki|Mi|Gi|Ti|K|M|G|T)?$`)
	maxBackoffPI = 100
)

func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Check reports the options that are not what the scheduler accepts,
// naming the key and an example.
func (o SlurmOptions) Check() []error {
	var errs []error
	for _, c := range []struct {
		key, v, example string
		re              *regexp.Regexp
	}{
		{"time", o.Time, `"2:00:00" or "1-00:00"`, slurmTime()},
		{"memory", o.Memory, `"8G"`, slurmMemory()},
		{"partition", o.Partition, `"gpu" or "short,long"`, slurmName()},
		{"account", o.Account, `"my-lab"`, slurmName()},
	} {
		if c.v != "" && !c.re.MatchString(c.v) {
			errs = append(errs, fmt.Errorf("[batch.slurm] %s = %q: not a Slurm %s (e.g. %s)", c.key, c.v, c.key, c.example))
		}
	}
	return errs
}

// Check reports the options Kubernetes would refuse.
func (o K8sOptions) Check() []error {
	var errs []error
	if o.Memory != "" && !k8sQuantity().MatchString(o.Memory) {
		errs = append(errs, fmt.Errorf("[batch.k8s] memory = %q: not a Kubernetes quantity (e.g. \"8Gi\")", o.Memory))
	}
	if o.BackoffLimitPerIndex < 0 || o.BackoffLimitPerIndex > maxBackoffPI {
		errs = append(errs, fmt.Errorf("[batch.k8s] backoff_limit_per_index = %d: between 0 and %d", o.BackoffLimitPerIndex, maxBackoffPI))
	}
	return errs
}

// Name is a DNS-safe job name from the file's name.
func (j ClusterJob) Name() string {
	stem := strings.TrimSuffix(filepath.Base(j.File), filepath.Ext(j.File))
	stem = strings.ToLower(strings.Trim(unsafeID().ReplaceAllString(stem, "-"), "-_"))
	stem = strings.ReplaceAll(stem, "_", "-")
	if len(stem) > 30 {
		stem = stem[:30]
	}
	return "pvisor-" + stem
}

// Slurm is an sbatch script for an array of Shards tasks; each task finds
// its share in SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT. All tasks write
// into the one output dir (it must be on a shared file system).
func (j ClusterJob) SlurmScript() string {
	return fmt.Sprintf(`#!/bin/bash
# Runs %[1]s as %[2]d Slurm array tasks, each a disjoint share of the runs.
# Submit: sbatch THIS_FILE; when all tasks are done: %[5]s batch report %[3]s
#SBATCH --job-name=%[4]s
#SBATCH --array=0-%[6]d
#SBATCH --cpus-per-task=%[7]d
#SBATCH --output=%[3]s/.batch/slurm-%%A_%%a.log
%[8]sset -euo pipefail
mkdir -p %[3]s/.batch
exec %[5]s batch run %[1]s --output-dir %[3]s --jobs %[7]d
`, shellQuote(j.File), j.Shards, shellQuote(j.Out), j.Name(), shellQuote(j.Pvisor), j.Shards-1, j.Jobs, j.slurmExtra())
}

// slurmExtra is the #SBATCH lines of [batch.slurm], in a fixed order.
func (j ClusterJob) slurmExtra() string {
	var b strings.Builder
	for _, o := range []struct{ flag, v string }{
		{"time", j.Slurm.Time}, {"mem", j.Slurm.Memory}, {"partition", j.Slurm.Partition}, {"account", j.Slurm.Account},
	} {
		if o.v != "" {
			fmt.Fprintf(&b, "#SBATCH --%s=%s\n", o.flag, o.v)
		}
	}
	return b.String()
}

// Kubernetes is an Indexed Job: pod i gets JOB_COMPLETION_INDEX=i and runs
// share i of Shards. The study dir (the batch file's directory, holding the
// sessions, workspaces and output dir) is a shared volume mounted at /study.
func (j ClusterJob) Kubernetes() string {
	file := "/study/" + filepath.Base(j.File)
	out := "/study/" + filepath.Base(j.Out)
	if rel, err := filepath.Rel(filepath.Dir(j.File), j.Out); err == nil && !strings.HasPrefix(rel, "..") {
		out = "/study/" + filepath.ToSlash(rel)
	}
	q := strconv.Quote
	return fmt.Sprintf(`# Runs %[1]s as %[2]d indexed pods, each a disjoint share of the runs.
# kubectl apply -f THIS_FILE; when it completes: pvisor batch report %[3]s
apiVersion: batch/v1
kind: Job
metadata:
  name: %[4]s
spec:
  completionMode: Indexed
  completions: %[2]d
  parallelism: %[2]d
  # Each index is retried on its own, and a retried pod skips the runs
  # its earlier attempt finished.
  backoffLimitPerIndex: %[11]d
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: pvisor
          image: %[5]s
          command: [%[6]s, "batch", "run", %[7]s, "--shards", "%[2]d", "--output-dir", %[8]s, "--jobs", "%[9]d"]
          # pvisor isolates replayed tools and agent CLIs itself: it runs as
          # root and makes PID, mount and network namespaces, mounts /proc,
          # overlayfs and tmpfs, and per-run memory cgroups. Inside a
          # container that takes a privileged one; the isolation it gives
          # each run is pvisor's own (README: isolation of replayed tools).
          securityContext:
            privileged: true
            runAsUser: 0
          resources:
            requests:
              cpu: "%[9]d"%[12]s
            limits:
              cpu: "%[9]d"%[12]s
          volumeMounts:
            - name: study
              mountPath: /study
      volumes:
        - name: study
          persistentVolumeClaim:
            claimName: %[10]s
`, filepath.Base(j.File), j.Shards, out, j.Name(), q(j.Image), q(j.Pvisor), q(file), q(out), j.Jobs, q(j.Claim), j.backoffPerIndex(), j.k8sMemory())
}

func (j ClusterJob) backoffPerIndex() int {
	if j.K8s.BackoffLimitPerIndex == 0 {
		return 2
	}
	return j.K8s.BackoffLimitPerIndex
}

// k8sMemory is the memory line of requests and limits, "" without one.
func (j ClusterJob) k8sMemory() string {
	if j.K8s.Memory == "" {
		return ""
	}
	return "\n              memory: " + strconv.Quote(j.K8s.Memory)
}

// shellQuote quotes s for bash when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// DefaultShards is the task count when a study names none: one task per
// jobs runs, so every run starts at once and each task's CPUs stay busy.
func DefaultShards(runs, jobs int) int {
	jobs = max(jobs, 1)
	return max((runs+jobs-1)/jobs, 1)
}

// OutsideStudy lists, once each and in order, the sessions, workspaces and
// output dir of runs that lie outside the batch file's directory: a Job
// mounts that directory alone (at /study), so they would be missing in
// the pods, and a copy of the study dir would lose them.
func OutsideStudy(spec *Spec, runs []*Run) []string {
	base := filepath.Dir(spec.File)
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if rel := shown(base, spec.OutputDir); filepath.IsAbs(rel) {
		add(spec.OutputDir)
	}
	for _, r := range runs {
		add(r.Trajectory) // shown: relative when inside
		add(r.Workspace)
	}
	return out
}
