//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/replay/batch/report"
	"github.com/pvisor/pvisor/replay/fakeagent"
)

// TestBatchOnSlurm submits the Slurm array script `pvisor batch emit slurm`
// writes to a real one-node Slurm cluster (testdata/e2e/slurm-cluster.sh,
// daemons private to a temp dir, in a loopback-only namespace) and holds the
// merged report of its shards to a single-machine run of the same file.
func TestBatchOnSlurm(t *testing.T) {
	root := projectRoot(t)
	work := t.TempDir()
	pvisor := buildPvisor(t, root, work)
	sessions := filepath.Join(root, "testdata", "e2e", "sessions")
	study := filepath.Join(work, "study.toml")
	os.WriteFile(study, []byte(fmt.Sprintf(`[batch]
output_dir = "cluster"
jobs = 2
shards = 3

[replay]
prepare_only = true

[[runs]]
agent = "codex"
trajectories = [%q]
after_steps = "all"
repeats = 2

[[runs]]
agent = "pi"
trajectories = [%q]
after_steps = { from = 1, every = 2 }

# Graded: the replayed prefix writes NOTES.md at step 3, so verify fails
# after steps 1 and 2 and passes after 3; the shares must match too.
[[runs]]
agent = "codex"
trajectories = [%q]
after_steps = [1, 2, 3]
replay_only = true
prepare_only = false
workspace = %q
verify = "test -f NOTES.md"
`, filepath.Join(sessions, "codex@*", "rollout-*.jsonl"), filepath.Join(sessions, "pi@*", "*Z_*.jsonl"),
		filepath.Join(sessions, "codex@0.171.0", "rollout-*.jsonl"), filepath.Join(sessions, "codex@0.171.0", "repo.tar.gz"))), 0o644)

	enterLoopbackNetns(t)
	// glibc's AI_ADDRCONFIG, which Slurm uses to bind, wants one IPv4
	// address other than 127.0.0.1; it stays on lo, so nothing leaves.
	if out, err := exec.Command("ip", "addr", "add", "10.255.255.1/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr add: %v\n%s", err, out)
	}
	script := filepath.Join(root, "testdata", "e2e", "slurm-cluster.sh")
	cluster := filepath.Join(work, "slurm")
	if out, err := exec.Command("bash", script, "start", cluster).CombinedOutput(); err != nil {
		if _, lookErr := exec.LookPath("slurmctld"); lookErr != nil {
			t.Skipf("slurm-wlm and munge cannot be installed here (%v):\n%s", err, out)
		}
		t.Fatalf("start the one-node Slurm cluster: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("bash", script, "stop", cluster).Run() })
	env := append(os.Environ(), "SLURM_CONF="+filepath.Join(cluster, "slurm.conf"))
	cmd := func(name string, args ...string) string {
		t.Helper()
		c := exec.Command(name, args...)
		c.Env, c.Dir = env, work
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}

	cmd(pvisor, "batch", "emit", "slurm", study)
	jobScript := filepath.Join(work, "cluster", ".batch", "slurm.sh")
	if s, _ := os.ReadFile(jobScript); !strings.Contains(string(s), "#SBATCH --array=0-2\n") {
		t.Fatalf("emitted script:\n%s", s)
	}
	t.Log(cmd("sbatch", "--wait", jobScript))
	logs, _ := filepath.Glob(filepath.Join(work, "cluster", ".batch", "slurm-*.log"))
	if len(logs) != 3 {
		t.Errorf("%d array task logs, want 3: %v", len(logs), logs)
	}
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		if !strings.Contains(string(data), `"shard":"`) {
			t.Errorf("%s: no shard result line:\n%s", l, data)
		}
	}
	cmd(pvisor, "batch", "run", study, "--output-dir", "single", "--shard", "0/1")
	cmd(pvisor, "batch", "report", "cluster")
	cmd(pvisor, "batch", "report", "single")

	load := func(dir string) (runs []string, groups []report.Group) {
		var rep report.Report
		data, err := os.ReadFile(filepath.Join(work, dir, "report.json"))
		if err != nil || json.Unmarshal(data, &rep) != nil {
			t.Fatalf("%s/report.json: %v", dir, err)
		}
		for _, r := range rep.Runs {
			var res struct{ Phase, Quality string }
			json.Unmarshal(r.Result, &res)
			verdict := "-"
			if r.Verify != nil {
				verdict = r.Verify.Verdict
			}
			runs = append(runs, fmt.Sprintf("%s %s %s %d %d exit=%d %s %s %s", r.RunID, r.Agent, r.Trajectory, r.AfterStep, r.Repeat, r.ExitCode, res.Phase, res.Quality, verdict))
		}
		for _, g := range rep.Groups {
			g.WallMS = report.Distribution{} // may differ
			// So may replayed observations: on a loaded node a command can
			// outlive Codex's exec yield time and read as still running.
			g.Observations, g.DriftShares = report.Drift{}, nil
			groups = append(groups, g)
		}
		return runs, groups
	}
	cr, cg := load("cluster")
	sr, sg := load("single")
	if len(sr) != 22 {
		t.Errorf("single-machine report has %d runs, want 5 codex steps × 2 repeats + 3 steps of each of the 3 pi recordings + 3 graded", len(sr))
	}
	graded := 0
	for _, g := range sg {
		if g.Verified > 0 {
			graded++
			if want := map[int]int{1: 0, 2: 0, 3: 1}[g.AfterStep]; g.Verdicts["pass"] != want {
				t.Errorf("after step %d: verdicts %v, want %d pass", g.AfterStep, g.Verdicts, want)
			}
		}
	}
	if graded != 3 {
		t.Errorf("%d graded groups, want 3", graded)
	}
	if diff := cmp.Diff(sr, cr); diff != "" {
		t.Errorf("runs: Slurm shards vs single machine (-single +slurm):\n%s", diff)
	}
	if diff := cmp.Diff(sg, cg); diff != "" {
		t.Errorf("groups: Slurm shards vs single machine (-single +slurm):\n%s", diff)
	}
	studyOnSlurm(t, root, work, pvisor, env)
}

// studyOnSlurm is issue 23's study on the same cluster: two scripted
// models × 2 boundaries × 2 repeats of the recorded Codex session,
// continued by the stand-in CLI (testdata/fakecodex) and graded by
// verify, as 2 array tasks and on one machine: the verdicts, comparisons
// and groups must be the same.
func studyOnSlurm(t *testing.T, root, work, pvisor string, env []string) {
	cli := filepath.Join(work, "bin", "codex")
	if err := fakeagent.BuildCodex(root, cli); err != nil {
		t.Fatal(err)
	}
	models := ""
	for _, m := range []struct{ name, script string }{{"fixer", fakeagent.FixerScript}, {"idler", fakeagent.IdlerScript}} {
		up, err := fakeagent.NewPerRun(m.script)
		if err != nil {
			t.Fatal(err)
		}
		// Listening from this (namespaced) thread: in the cluster's netns.
		srv := httptest.NewServer(up)
		t.Cleanup(srv.Close)
		models += fmt.Sprintf("[[models]]\nname = %q\nupstream = \"openai-responses\"\nbase_url = \"%s/v1\"\nkey_env = \"PVISOR_STUDY_KEY\"\n\n", m.name, srv.URL)
	}
	session := filepath.Join(root, "testdata", "e2e", "sessions", "codex@0.171.0")
	dir := filepath.Join(work, "study2")
	os.MkdirAll(dir, 0o755)
	study := filepath.Join(dir, "study.toml")
	os.WriteFile(study, []byte(fmt.Sprintf(`[batch]
output_dir = "cluster"
jobs = 2
shards = 2
verify = %q

[replay]
agent_entrypoint = %q

%s[[runs]]
agent = "codex"
trajectories = [%q]
after_steps = [1, 3]
repeats = 2
workspace = %q
`, fakeagent.VerifyFixed, cli, models, filepath.Join(session, "rollout-*.jsonl"), filepath.Join(session, "repo.tar.gz"))), 0o644)
	env = append(env, "PVISOR_STUDY_KEY=not-a-real-key")
	cmd := func(name string, args ...string) {
		t.Helper()
		c := exec.Command(name, args...)
		c.Env, c.Dir = env, dir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	cmd(pvisor, "batch", "emit", "slurm", study)
	cmd("sbatch", "--wait", filepath.Join(dir, "cluster", ".batch", "slurm.sh"))
	cmd(pvisor, "batch", "run", study, "--output-dir", "single", "--shard", "0/1")
	cmd(pvisor, "batch", "report", "cluster")
	cmd(pvisor, "batch", "report", "single")
	load := func(out string) (runs []string, rep report.Report) {
		data, err := os.ReadFile(filepath.Join(dir, out, "report.json"))
		if err != nil || json.Unmarshal(data, &rep) != nil {
			t.Fatalf("%s/report.json: %v", out, err)
		}
		for _, r := range rep.Runs {
			verdict := "-"
			if r.Verify != nil {
				verdict = r.Verify.Verdict
			}
			runs = append(runs, fmt.Sprintf("%s %s %d %d exit=%d %s", r.RunID, r.Model, r.AfterStep, r.Repeat, r.ExitCode, verdict))
		}
		for i := range rep.Groups {
			g := &rep.Groups[i]
			if g.Tokens == nil {
				t.Errorf("%s: group %s after step %d has no tokens", out, g.Upstream, g.AfterStep)
			}
			// The fake model counts input tokens by request size, which
			// the workspace path (under the output dir) changes.
			g.WallMS, g.Tokens = report.Distribution{}, nil
			g.Observations, g.DriftShares = report.Drift{}, nil
		}
		return runs, rep
	}
	cr, crep := load("cluster")
	sr, srep := load("single")
	if len(sr) != 8 || len(srep.Comparisons) != 2 {
		t.Fatalf("single machine: %d runs, %d comparisons; want 8 and 2:\n%s", len(sr), len(srep.Comparisons), strings.Join(sr, "\n"))
	}
	for _, c := range srep.Comparisons {
		if v := c.VerifyPass; v == nil || v.A.K != 2 || v.B.K != 0 || v.CI.Low <= 0 {
			t.Errorf("after step %d: verify pass %+v, want fixer 2/2 against idler 0/2 with an interval above 0", c.AfterStep, v)
		}
	}
	if diff := cmp.Diff(sr, cr); diff != "" {
		t.Errorf("study runs: Slurm shards vs single machine (-single +slurm):\n%s", diff)
	}
	if diff := cmp.Diff(srep.Comparisons, crep.Comparisons); diff != "" {
		t.Errorf("study comparisons: Slurm shards vs single machine (-single +slurm):\n%s", diff)
	}
	if diff := cmp.Diff(srep.Groups, crep.Groups); diff != "" {
		t.Errorf("study groups: Slurm shards vs single machine (-single +slurm):\n%s", diff)
	}
}
