//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/miniswe"
)

// mini-swe-agent is a Python package (a venv per release, installed by
// install-clis.sh). Its recordings are the fixtures of trajectory/miniswe's
// replay tests, so they live there: testdata/recorded/<version>. The
// script walks the greeter task through the cases a replay must
// reproduce: a parallel batch (2.x), stderr, non-ASCII and "\r" output, an
// elided long output, a failing command, a timeout and the submission;
// 1.x also answers one reply with two actions (a format error).

const miniTimeoutSecs = "2"

var miniCommands = [][]string{
	{"ls -A", "cat README.md; echo 'héllo ✓'; echo to-stderr >&2; printf 'a\\r\\nb\\rc\\n'"},
	{"grep -rn 'def ' . --include=*.py | sort; seq 1 3000"},
	{"printf '# Notes\\n\\n- greet() lives in greeter/util.py\\n' > NOTES.md"},
	{"sed -i 's/greting/greeting/' README.md && test -f missing.txt"},
	{"echo early; sleep 5; echo late"},
	{"git status --short"},
	{"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},
}

// miniScript is the task as tool calls (2.x) or as fenced bash blocks
// (1.x, which sends no tools).
func miniScript(major int) fakemodel.Script {
	var s fakemodel.Script
	for i, cmds := range miniCommands {
		if major >= 2 {
			r := fakemodel.Reply{Text: "Step " + strconv.Itoa(i+1) + "."}
			for _, c := range cmds {
				args, _ := json.Marshal(map[string]string{"command": c})
				r.ToolCalls = append(r.ToolCalls, fn("bash", string(args)))
			}
			s.Replies = append(s.Replies, r)
			continue
		}
		if i == 1 {
			s.Replies = append(s.Replies, fakemodel.Reply{Text: "Two at once:\n```bash\nls\n```\n```bash\npwd\n```"})
		}
		for _, c := range cmds {
			s.Replies = append(s.Replies, fakemodel.Reply{Text: "THOUGHT: step " + strconv.Itoa(i+1) + ".\n\n```bash\n" + c + "\n```"})
		}
	}
	s.TextActions = major < 2
	return s
}

// TestRecordMiniSessions runs every tested mini-swe-agent release through
// the script against the fake model in a loopback-only namespace, checks
// that it submitted and that pvisor decodes the trajectory step for step,
// and with -record stores it as trajectory/miniswe's fixture.
func TestRecordMiniSessions(t *testing.T) {
	for _, rel := range tested.Of(miniswe.AgentName) {
		t.Run(rel.Version, func(t *testing.T) { recordMini(t, rel) })
	}
}

func recordMini(t *testing.T, rel tested.Release) {
	major, _ := strconv.Atoi(strings.SplitN(rel.Version, ".", 2)[0])
	spec := &agentSpec{name: rel.Agent, bin: rel.Binary, protocol: fakemodel.Chat, script: miniScript(major)}
	r := newRun(t, spec, releaseBin(t, rel))
	enterLoopbackNetns(t)
	r.makeRepo(t)
	repoTar, err := tarDir(r.repo)
	if err != nil {
		t.Fatal(err)
	}
	r.startFake(t)
	out := filepath.Join(r.root, "last_mini_run.traj.json")
	r.env = append(r.baseEnv(), "MSWEA_CONFIGURED=true", "MSWEA_COST_TRACKING=ignore_errors",
		"MSWEA_GLOBAL_CONFIG_DIR="+filepath.Join(r.home, ".config", "mini-swe-agent"),
		"LITELLM_LOCAL_MODEL_COST_MAP=True", "OPENAI_API_KEY="+fakeKey)
	args := []string{"-y", "--exit-immediately", "-l", "0", "-t", taskPrompt, "-m", "openai/fake-model", "-o", out}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	if major >= 2 {
		args = append(args, "-c", "mini.yaml", "-c", "environment.timeout="+miniTimeoutSecs,
			"-c", "model.model_kwargs.api_base="+r.url+"/v1")
	} else {
		// 1.x takes one config file: its own mini.yaml with the overrides.
		cfg := filepath.Join(r.root, "mini.yaml")
		py := filepath.Join(filepath.Dir(r.bin), "python")
		code := `import sys, yaml, minisweagent, pathlib
c = yaml.safe_load((pathlib.Path(minisweagent.__file__).parent / "config" / "mini.yaml").read_text())
c.setdefault("environment", {})["timeout"] = int(sys.argv[2])
c.setdefault("model", {}).setdefault("model_kwargs", {})["api_base"] = sys.argv[3]
pathlib.Path(sys.argv[1]).write_text(yaml.safe_dump(c))`
		if _, stderr, err := r.exec(ctx, py, "-c", code, cfg, miniTimeoutSecs, r.url+"/v1"); err != nil {
			t.Fatalf("writing the 1.x config: %v\n%s", err, stderr)
		}
		args = append(args, "-c", cfg)
	}
	r.argv = append([]string{r.bin}, args...)
	r.stdout, r.stderr, err = r.exec(ctx, r.argv...)
	if err != nil {
		t.Fatalf("mini failed: %v\n%s", err, r.diagnose())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no trajectory: %v\n%s", err, r.diagnose())
	}
	tr, err := miniswe.New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Version != rel.Version || !bytes.Contains(data, []byte(`"exit_status": "Submitted"`)) {
		t.Fatalf("trajectory of %s (format %s) did not submit\n%s", tr.Version, tr.Format, r.diagnose())
	}
	want := len(miniCommands) // 2.x: one step per reply, a batch each
	if major < 2 {
		want = 0 // 1.x: one step per command
		for _, cmds := range miniCommands {
			want += len(cmds)
		}
	}
	if got := len(tr.Steps()); got != want {
		t.Errorf("pvisor decodes %d steps, the script makes %d", got, want)
	}
	for _, q := range r.fake.Requests() {
		if q.Kind != fakemodel.KindMain {
			t.Errorf("request %d was %s: mini's requests must all take script replies", q.Seq, q.Kind)
		}
	}
	if *record {
		dir := filepath.Join(projectRoot(t), "trajectory", "miniswe", "testdata", "recorded", rel.Version)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{"last_mini_run.traj.json": data, "repo.tar.gz": repoTar} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("recorded %s into %s", rel.Version, dir)
	}
}

// TestMiniReplayEveryStep replays each recording at every after-step with
// the pvisor binary: every fresh observation is exact and the rebuilt
// trajectory is the recorded prefix byte for byte.
func TestMiniReplayEveryStep(t *testing.T) {
	pvisor := pvisorBinary(t)
	dirs, _ := filepath.Glob(filepath.Join(projectRoot(t), "trajectory", "miniswe", "testdata", "recorded", "*"))
	if len(dirs) == 0 {
		t.Fatal("no mini-swe-agent recordings")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			src := filepath.Join(dir, "last_mini_run.traj.json")
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := miniswe.New().Decode(bytes.NewReader(data), trajectory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for n := 1; n < len(tr.Steps()); n++ { // the last step is the submission
				t.Run("after-"+strconv.Itoa(n), func(t *testing.T) { replayMini(t, pvisor, dir, src, n) })
			}
		})
	}
}

// pvisorMini runs `pvisor replay` on a recording at after-step n in a fresh
// copy of its initial repo and returns the work dir (outputs in out/r) and
// what pvisor printed.
func pvisorMini(t *testing.T, pvisor, dir, src string, n int, args ...string) (string, []byte, error) {
	work := t.TempDir()
	ws := filepath.Join(work, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xzf", filepath.Join(dir, "repo.tar.gz"), "-C", ws).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v\n%s", err, out)
	}
	cmd := exec.Command(pvisor, append([]string{"replay", "--agent", miniswe.AgentName, "--trajectory", src, "--after-step", strconv.Itoa(n),
		"--workspace", ws, "--run-id", "r", "--state-dir", filepath.Join(work, "state"), "--output-dir", filepath.Join(work, "out")}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + work, "LANG=C.UTF-8", "TERM=dumb", "GIT_CONFIG_NOSYSTEM=1"}
	stdout, err := cmd.Output()
	return work, stdout, err
}

func replayMini(t *testing.T, pvisor, dir, src string, n int) {
	work, stdout, err := pvisorMini(t, pvisor, dir, src, n, "--replay-only")
	if err != nil {
		t.Fatalf("pvisor replay: %v\n%s", err, stdout)
	}
	var res struct {
		Phase string `json:"phase"`
	}
	lines := bytes.Split(bytes.TrimSpace(stdout), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil || res.Phase != "replayed" {
		t.Fatalf("result %s (%v)", lines[len(lines)-1], err)
	}
	out := filepath.Join(work, "out", "r")
	var comps []struct {
		CallID string `json:"call_id"`
		Exact  bool   `json:"exact"`
		Diff   string `json:"diff"`
	}
	b, err := os.ReadFile(filepath.Join(out, "observation-comparison.json"))
	if err != nil || json.Unmarshal(b, &comps) != nil || len(comps) == 0 {
		t.Fatalf("observation-comparison.json: %v", err)
	}
	for _, c := range comps {
		if !c.Exact {
			t.Errorf("call %s is not exact:\n%s", c.CallID, c.Diff)
		}
	}
	prefix, err1 := os.ReadFile(filepath.Join(out, "native", "prepared-prefix.json"))
	rebuilt, err2 := os.ReadFile(filepath.Join(out, "native", "reconstructed-trajectory.json"))
	if err1 != nil || err2 != nil || !bytes.Equal(prefix, rebuilt) {
		t.Errorf("the rebuilt trajectory is not the recorded prefix (%v, %v)", err1, err2)
	}
}

// TestMiniContinueEveryStep continues each recording at every after-step
// with the release that wrote it, through the bridge with the recorded
// upstream, in a loopback-only namespace: mini completes (it submits), the
// first request is the projection of the rebuilt trajectory (the envelope
// forwards nothing else), and its next action calls the recorded tools.
func TestMiniContinueEveryStep(t *testing.T) {
	pvisor := pvisorBinary(t)
	for _, rel := range tested.Of(miniswe.AgentName) {
		dir := filepath.Join(projectRoot(t), "trajectory", "miniswe", "testdata", "recorded", rel.Version)
		src := filepath.Join(dir, "last_mini_run.traj.json")
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatalf("%s: no recording of this release: %v", rel.Version, err)
		}
		tr, err := miniswe.New().Decode(bytes.NewReader(data), trajectory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Run(rel.Version, func(t *testing.T) {
			bin := releaseBin(t, rel)
			for n := 1; n < len(tr.Steps()); n++ {
				t.Run("after-"+strconv.Itoa(n), func(t *testing.T) {
					// Each boundary has its own directories and namespace; mini
					// spends most of a run importing its Python packages.
					t.Parallel()
					continueMini(t, pvisor, bin, dir, src, n)
				})
			}
		})
	}
}

func continueMini(t *testing.T, pvisor, bin, dir, src string, n int) {
	enterLoopbackNetns(t)
	work, stdout, _ := pvisorMini(t, pvisor, dir, src, n, "--upstream", "recorded", "--agent-entrypoint", bin)
	checkRunnerContinued(t, work, stdout)
}

// TestMiniTamperedRefused: when what the runner resumes differs from the
// rebuilt trajectory (here its copy is edited before mini reads it), the
// first request is refused: exit 40, nothing forwarded.
func TestMiniTamperedRefused(t *testing.T) {
	rels := tested.Of(miniswe.AgentName)
	rel := rels[len(rels)-1]
	real, err := filepath.EvalSymlinks(releaseBin(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	pvisor := pvisorBinary(t)
	enterLoopbackNetns(t)
	venv := filepath.Join(t.TempDir(), "bin")
	os.MkdirAll(venv, 0o755)
	py := filepath.Join(venv, "python")
	os.WriteFile(py, []byte("#!/bin/sh\n[ -f \"$HOME/rebuilt.traj.json\" ] && sed -i 's/greting/grEting/g' \"$HOME/rebuilt.traj.json\"\n"+
		"exec "+filepath.Join(filepath.Dir(real), "python")+" \"$@\"\n"), 0o755)
	mini := filepath.Join(venv, "mini")
	os.WriteFile(mini, []byte("#!"+py+"\n"), 0o755)
	dir := filepath.Join(projectRoot(t), "trajectory", "miniswe", "testdata", "recorded", rel.Version)
	_, stdout, err := pvisorMini(t, pvisor, dir, filepath.Join(dir, "last_mini_run.traj.json"), 2, "--upstream", "recorded", "--agent-entrypoint", mini)
	checkTamperRefused(t, stdout, err)
}
