//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/replay/batch/report"
	"github.com/pvisor/pvisor/replay/tested"
)

// TestBatchStudyAllAgents runs the example study, per agent, over
// the bundled recorded sessions with the real CLIs and the recorded
// upstream: `pvisor batch run` as its own process in a loopback-only
// namespace, then `batch report`. The recording plays its own next
// actions, so every run must continue and agree with it; running the file
// again must skip every run.
func TestBatchStudyAllAgents(t *testing.T) {
	root := projectRoot(t)
	var study strings.Builder
	study.WriteString("[batch]\noutput_dir = \"out\"\njobs = 2\n\n[replay]\nupstream = \"recorded\"\nmax_steps = 30\n")
	for _, agent := range []string{"codex", "claude-code", "opencode", "pi"} {
		rels := tested.Of(agent)
		bin := releaseBin(t, rels[len(rels)-1]) // today's CLI on the oldest recording
		dir := recordingDirs(t, agent)[0]
		m, err := readManifest(filepath.Join(dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&study, "\n[[runs]]\nagent = %q\ntrajectories = [%q]\nafter_steps = [1, 3]\nworkspace = %q\nrepeats = 1\nagent_entrypoint = %q\n",
			agent, filepath.Join(dir, m.Files["session"]), filepath.Join(dir, m.Files["initial_repo"]), bin)
	}
	work := t.TempDir()
	file := filepath.Join(work, "study.toml")
	if err := os.WriteFile(file, []byte(study.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pvisor := buildPvisor(t, root, work)

	enterLoopbackNetns(t)
	run := func(args ...string) (stdout, stderr string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		var o, e bytes.Buffer
		cmd := exec.CommandContext(ctx, pvisor, args...)
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("pvisor %v: %v\n%s\n%s", args, err, o.String(), e.String())
		}
		return o.String(), e.String()
	}
	stdout, stderr := run("batch", "run", file)
	t.Logf("batch run:\n%s", stderr)
	if n := strings.Count(stdout, `"phase":"continued"`); n != 8 {
		t.Fatalf("%d continued runs, want 4 agents × 2 boundaries:\n%s", n, stdout)
	}
	stdout, _ = run("batch", "run", file)
	if !strings.Contains(stdout, `"ran":0,"runs":8,"shard":"","skipped":8`) {
		t.Errorf("second run did not skip every run:\n%s", stdout)
	}

	out := filepath.Join(work, "out")
	run("batch", "report", out)
	var rep report.Report
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || json.Unmarshal(data, &rep) != nil {
		t.Fatalf("report.json: %v", err)
	}
	if len(rep.Runs) != 8 || len(rep.Groups) != 8 {
		t.Fatalf("report has %d runs in %d groups, want 8 in 8", len(rep.Runs), len(rep.Groups))
	}
	for _, g := range rep.Groups {
		if g.Failed != 0 || g.Compared != 1 || *g.ToolNameAgreement != 1 || *g.ExactToolAgreement != 1 || g.Observations.Calls == 0 {
			t.Errorf("%s × %s after step %d: %+v", g.Agent, g.Upstream, g.AfterStep, g)
		}
	}
	for _, name := range []string{"report.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
}

// buildPvisor builds the static binary into dir: batches run their replays
// as child processes of it.
func buildPvisor(t *testing.T, root, dir string) string {
	t.Helper()
	pvisor := filepath.Join(dir, "pvisor")
	build := exec.Command("go", "build", "-o", pvisor, "./cmd/pvisor")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pvisor: %v\n%s", err, out)
	}
	return pvisor
}
