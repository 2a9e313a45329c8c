package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay/batch/report"
	"github.com/pvisor/pvisor/replay/fakeagent"
)

// TestStudyComparesTwoModels is issue 23's "done when" study: two models
// (two fake upstreams that answer differently) × 2 boundaries × 2 repeats
// of the recorded Codex session, each continuation graded by a verify
// command, through the real `pvisor batch run` and `pvisor batch report`.
// A stand-in Codex CLI (replay/e2e/testdata/fakecodex, built here)
// continues, so no agent CLI is needed. The report's comparison table must
// show both models' verify pass shares with an interval, and each run its
// diff and its recorded and continued next actions.
func TestStudyComparesTwoModels(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 8 replays with continuation")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	session, err := filepath.Abs("../../testdata/e2e/sessions/codex@0.171.0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(dir, "bin", "codex")
	if err := fakeagent.BuildCodex(root, cli); err != nil {
		t.Fatal(err)
	}
	models := ""
	for _, m := range []struct{ name, script string }{{"fixer", fakeagent.FixerScript}, {"idler", fakeagent.IdlerScript}} {
		up, err := fakeagent.NewPerRun(m.script)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(up)
		t.Cleanup(srv.Close)
		models += fmt.Sprintf("[[models]]\nname = %q\nupstream = \"openai-responses\"\nbase_url = \"%s/v1\"\nkey_env = \"PVISOR_STUDY_KEY\"\nprice_input = 2.5\nprice_output = 10\n\n", m.name, srv.URL)
	}
	t.Setenv("PVISOR_STUDY_KEY", "not-a-real-key")
	study := filepath.Join(dir, "study.toml")
	toml := fmt.Sprintf(`[batch]
output_dir = "out"
jobs = 4
verify = %q
verify_timeout_ms = 60000

[replay]
agent_entrypoint = %q

%s[[runs]]
agent = "codex"
trajectories = ["%s/rollout-*.jsonl"]
after_steps = [1, 3]
repeats = 2
workspace = "%s/repo.tar.gz"
`, fakeagent.VerifyFixed, cli, models, session, session)
	if err := os.WriteFile(study, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	pvisor := func(args ...string) string {
		cmd := exec.Command(self, args...)
		cmd.Args[0] = "pvisor"
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("pvisor %v: %v\n%s\n%s", args, err, out, stderr)
		}
		return string(out)
	}
	out := pvisor("batch", "run", study)
	if !strings.Contains(out, `"ran":8,"runs":8`) {
		t.Fatalf("batch run:\n%s", out)
	}
	pvisor("batch", "report", filepath.Join(dir, "out"))
	var rep report.Report
	data, err := os.ReadFile(filepath.Join(dir, "out", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Runs {
		want := map[string]string{"fixer": "pass", "idler": "fail"}[r.Model]
		if r.Verify == nil || r.Verify.Verdict != want {
			t.Errorf("%s (%s): verify %+v, want %s", r.RunID, r.Model, r.Verify, want)
		}
		if a := r.Agreement; a == nil || a.FirstDivergence == nil || *a.FirstDivergence != 1 || a.RecordedActions == 0 {
			t.Errorf("%s: action agreement %+v, want a divergence at the first action", r.RunID, a)
		}
		if r.Diff == nil || r.Tokens == nil || r.Cost == nil {
			t.Errorf("%s: diff %v, tokens %v, cost %v", r.RunID, r.Diff, r.Tokens, r.Cost)
			continue
		}
		diff, _ := os.ReadFile(r.Diff.Path)
		if got := strings.Contains(string(diff), "+fixed"); got != (r.Model == "fixer") {
			t.Errorf("%s (%s): workspace diff:\n%s", r.RunID, r.Model, diff)
		}
	}
	if len(rep.Comparisons) != 2 {
		t.Fatalf("comparisons: %+v", rep.Comparisons)
	}
	for _, c := range rep.Comparisons {
		v := c.VerifyPass
		if v == nil || v.A.K != 2 || v.A.N != 2 || v.B.K != 0 || v.B.N != 2 || v.Diff != 1 || v.CI.Low <= 0 || v.CI.High != 1 {
			t.Errorf("after step %d, %s vs %s: verify pass %+v", c.AfterStep, c.A, c.B, v)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "out", "report.html"))
	for _, want := range []string{`<table id="comparisons">`, "100% (2/2)", "0% (0/2)", "+100 pp (+", `class="sidebyside"`, "<ins>+fixed\n</ins>", "recorded next action", "first divergence: action 1"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
