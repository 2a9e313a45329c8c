package batch

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
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
}

// Name is a DNS-safe job name from the file's name.
func (j ClusterJob) Name() string {
	stem := strings.TrimSuffix(filepath.Base(j.File), filepath.Ext(j.File))
	stem = strings.ToLower(strings.Trim(unsafeID.ReplaceAllString(stem, "-"), "-_"))
	stem = strings.ReplaceAll(stem, "_", "-")
	if len(stem) > 30 {
		stem = stem[:30]
	}
	return "pvisor-" + stem
}

// Slurm is an sbatch script for an array of Shards tasks; each task finds
// its share in SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT. All tasks write
// into the one output dir (it must be on a shared file system).
func (j ClusterJob) Slurm() string {
	return fmt.Sprintf(`#!/bin/bash
# Runs %[1]s as %[2]d Slurm array tasks, each a disjoint share of the runs.
# Submit: sbatch THIS_FILE; when all tasks are done: %[5]s batch report %[3]s
#SBATCH --job-name=%[4]s
#SBATCH --array=0-%[6]d
#SBATCH --cpus-per-task=%[7]d
#SBATCH --output=%[3]s/.batch/slurm-%%A_%%a.log
set -euo pipefail
mkdir -p %[3]s/.batch
exec %[5]s batch run %[1]s --output-dir %[3]s --jobs %[7]d
`, shellQuote(j.File), j.Shards, shellQuote(j.Out), j.Name(), shellQuote(j.Pvisor), j.Shards-1, j.Jobs)
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
  # A retried pod skips the runs its earlier attempt finished.
  backoffLimit: %[2]d
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: pvisor
          image: %[5]s
          command: [%[6]s, "batch", "run", %[7]s, "--shards", "%[2]d", "--output-dir", %[8]s, "--jobs", "%[9]d"]
          resources:
            requests:
              cpu: "%[9]d"
          volumeMounts:
            - name: study
              mountPath: /study
      volumes:
        - name: study
          persistentVolumeClaim:
            claimName: %[10]s
`, filepath.Base(j.File), j.Shards, out, j.Name(), q(j.Image), q(j.Pvisor), q(file), q(out), j.Jobs, q(j.Claim))
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
