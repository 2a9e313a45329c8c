package batch

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func TestEmitGolden(t *testing.T) {
	job := ClusterJob{File: "/studies/agreement/study.toml", Out: "/studies/agreement/out", Shards: 4, Jobs: 2,
		Pvisor: "/opt/pvisor/bin/pvisor", Image: "registry.example/pvisor:1", Claim: "studies"}
	tuned := job
	tuned.Slurm = SlurmOptions{Time: "1-02:00:00", Memory: "16G", Partition: "short,long", Account: "agents-lab"}
	tuned.K8s = K8sOptions{Memory: "8Gi", BackoffLimitPerIndex: 5}
	for _, tc := range []struct{ name, got string }{
		{"slurm.sh", job.SlurmScript()},
		{"k8s-job.yaml", job.Kubernetes()},
		{"slurm-options.sh", tuned.SlurmScript()},
		{"k8s-job-options.yaml", tuned.Kubernetes()},
	} {
		golden := filepath.Join("testdata", "golden", tc.name)
		if *update {
			os.MkdirAll(filepath.Dir(golden), 0o755)
			if err := os.WriteFile(golden, []byte(tc.got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if string(want) != tc.got {
			t.Errorf("%s differs from %s (run with -update after checking):\n%s", tc.name, golden, tc.got)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"/a/b.toml": "/a/b.toml", "/my study/x": "'/my study/x'", "it's": `'it'\''s'`} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestDefaultShards(t *testing.T) {
	for _, tc := range []struct{ runs, jobs, want int }{
		{8, 2, 4}, {9, 2, 5}, {1, 4, 1}, {8, 0, 8}, {0, 2, 1}, {7, 7, 1},
	} {
		if got := DefaultShards(tc.runs, tc.jobs); got != tc.want {
			t.Errorf("DefaultShards(%d, %d) = %d, want %d", tc.runs, tc.jobs, got, tc.want)
		}
	}
}

// TestClusterOptionsChecked: a study file's cluster settings go into a
// script or a manifest, so only what the scheduler's syntax allows passes.
func TestClusterOptionsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		errs int
		opt  interface{ Check() []error }
	}{
		{"slurm ok", 0, SlurmOptions{Time: "30", Memory: "500M", Partition: "gpu", Account: "a.b-c"}},
		{"slurm ok long", 0, SlurmOptions{Time: "2-12", Memory: "8G"}},
		{"slurm injection", 2, SlurmOptions{Time: "1:00\n#SBATCH --uid=0", Partition: "gpu; rm -rf /"}},
		{"slurm bad memory", 1, SlurmOptions{Memory: "8GB"}},
		{"k8s ok", 0, K8sOptions{Memory: "7.5Gi", BackoffLimitPerIndex: 3}},
		{"k8s bad", 2, K8sOptions{Memory: "8Gi\n  privileged: false", BackoffLimitPerIndex: -1}},
	} {
		if errs := tc.opt.Check(); len(errs) != tc.errs {
			t.Errorf("%s: %v, want %d problem(s)", tc.name, errs, tc.errs)
		}
	}
}

// TestEmittedJobPassesKubernetesValidate checks the emitted Jobs against
// the Kubernetes schemas with a real validator, kubernetes-validate
// --strict (PyPI: pip install kubernetes-validate), taken from PATH or
// $PVISOR_KUBERNETES_VALIDATE; skipped where it is not installed.
func TestEmittedJobPassesKubernetesValidate(t *testing.T) {
	tool := os.Getenv("PVISOR_KUBERNETES_VALIDATE")
	if tool == "" {
		var err error
		if tool, err = exec.LookPath("kubernetes-validate"); err != nil {
			t.Skip("kubernetes-validate is not installed (pip install kubernetes-validate, or set PVISOR_KUBERNETES_VALIDATE)")
		}
	}
	for _, name := range []string{"k8s-job.yaml", "k8s-job-options.yaml"} {
		out, err := exec.Command(tool, "--strict", filepath.Join("testdata", "golden", name)).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}
