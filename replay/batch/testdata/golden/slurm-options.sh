#!/bin/bash
# Runs /studies/agreement/study.toml as 4 Slurm array tasks, each a disjoint share of the runs.
# Submit: sbatch THIS_FILE; when all tasks are done: /opt/pvisor/bin/pvisor batch report /studies/agreement/out
#SBATCH --job-name=pvisor-study
#SBATCH --array=0-3
#SBATCH --cpus-per-task=2
#SBATCH --output=/studies/agreement/out/.batch/slurm-%A_%a.log
#SBATCH --time=1-02:00:00
#SBATCH --mem=16G
#SBATCH --partition=short,long
#SBATCH --account=agents-lab
set -euo pipefail
mkdir -p /studies/agreement/out/.batch
exec /opt/pvisor/bin/pvisor batch run /studies/agreement/study.toml --output-dir /studies/agreement/out --jobs 2
