//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/openhands"
)

// OpenHands V1 is the openhands-sdk Python package (a venv per release,
// installed by install-clis.sh when a Python >= 3.12 exists; the tests
// skip and say so otherwise, and fail on CI). Its recordings against the
// fake model are trajectory/openhands fixtures: testdata/recorded/<version>.

// ohCall is a call of one of the SDK's tools with the arguments its schema
// asks of the model (summary and security_risk besides the tool's own).
func ohCall(name string, args map[string]any) fakemodel.ToolCall {
	args["summary"], args["security_risk"] = name, "LOW"
	b, _ := json.Marshal(args)
	return fn(name, string(b))
}

// ohScript walks the greeter task through what a continuation must carry
// over: commands with stderr and non-ASCII output, an editor view, edits, a
// new file with non-ASCII text, a failing command, a failed edit, a
// parallel batch, and finish.
func ohScript() fakemodel.Script {
	term := func(cmd string) fakemodel.ToolCall { return ohCall("terminal", map[string]any{"command": cmd}) }
	ed := func(args map[string]any) fakemodel.ToolCall { return ohCall("file_editor", args) }
	reply := func(text string, calls ...fakemodel.ToolCall) fakemodel.Reply {
		return fakemodel.Reply{Text: text, ToolCalls: calls}
	}
	return fakemodel.Script{Replies: []fakemodel.Reply{
		reply("Look around.", term("ls -A && cat README.md; echo 'héllo ✓'; echo to-stderr >&2")),
		reply("Read the README.", ed(map[string]any{"command": "view", "path": "{CWD}/README.md"})),
		reply("Fix the typo.", ed(map[string]any{"command": "str_replace", "path": "{CWD}/README.md", "old_str": "greting", "new_str": "greeting"})),
		reply("Write notes.", ed(map[string]any{"command": "create", "path": "{CWD}/NOTES.md", "file_text": "# Notes\n\n- greet() lives in greeter/util.py ✓\n"})),
		reply("Is there a missing file?", term("test -f missing.txt")),
		reply("A wrong edit.", ed(map[string]any{"command": "str_replace", "path": "{CWD}/README.md", "old_str": "no such text", "new_str": "x"})),
		reply("Both at once.", term("git status --short"), ed(map[string]any{"command": "view", "path": "{CWD}/greeter"})),
		reply("Done.", ohCall("finish", map[string]any{"message": "Fixed the typo and wrote NOTES.md."})),
	}}
}

const ohRecording = "events.jsonl"

// ohVenvPython is the interpreter of a release's venv.
func ohVenvPython(bin string) string { return filepath.Join(filepath.Dir(bin), "python") }

// TestRecordOpenHandsSessions runs every tested openhands-sdk release
// through the script against the fake model in a loopback-only namespace,
// checks that the agent finished and that pvisor decodes one step per
// response, and with -record stores the events as trajectory/openhands's
// fixture.
func TestRecordOpenHandsSessions(t *testing.T) {
	for _, rel := range tested.Of(openhands.AgentName) {
		t.Run(rel.Version, func(t *testing.T) { recordOpenHands(t, rel) })
	}
}

func recordOpenHands(t *testing.T, rel tested.Release) {
	spec := &agentSpec{name: rel.Agent, bin: rel.Binary, protocol: fakemodel.Chat, script: ohScript()}
	r := newRun(t, spec, releaseBin(t, rel))
	enterLoopbackNetns(t)
	r.makeRepo(t)
	repoTar, err := tarDir(r.repo)
	if err != nil {
		t.Fatal(err)
	}
	r.startFake(t)
	out := filepath.Join(r.root, "conversations")
	r.env = append(r.baseEnv(), "OPENAI_API_KEY="+fakeKey, "LITELLM_LOCAL_MODEL_COST_MAP=True", "OPENHANDS_SUPPRESS_BANNER=1")
	rec := filepath.Join(projectRoot(t), "trajectory", "openhands", "testdata", "recorded", "record_ohsdk.py")
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	r.argv = []string{ohVenvPython(r.bin), rec, r.repo, out, r.url + "/v1", taskPrompt}
	if r.stdout, r.stderr, err = r.exec(ctx, r.argv...); err != nil {
		t.Fatalf("the SDK failed: %v\n%s", err, r.diagnose())
	}
	data := joinEvents(t, out)
	tr, err := openhands.New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(tr.Steps()), len(ohScript().Replies); got != want || tr.Cwd != r.repo {
		t.Fatalf("pvisor decodes %d steps in %q, the script makes %d in %s", got, tr.Cwd, want, r.repo)
	}
	for _, q := range r.fake.Requests() {
		if q.Kind != fakemodel.KindMain {
			t.Errorf("request %d was %s: the SDK's requests must all take script replies", q.Seq, q.Kind)
		}
	}
	if bytes.Contains(data, []byte(fakeKey)) {
		t.Error("the API key is in the events")
	}
	if *record {
		dir := filepath.Join(projectRoot(t), "trajectory", "openhands", "testdata", "recorded", rel.Version)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{ohRecording: data, "repo.tar.gz": repoTar} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("recorded %s into %s", rel.Version, dir)
	}
}

// joinEvents is `jq -c . <conversation>/events/event-*.json` of the one
// conversation under dir.
func joinEvents(t *testing.T, dir string) []byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "events", "event-*.json"))
	if len(files) == 0 {
		t.Fatalf("no events under %s", dir)
	}
	sort.Strings(files) // event-<5+ digit index>: fewer than 100000 events sort as numbers
	var out bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&out, b); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// ohRecorded is a tested release and its recorded fixture, decoded.
type ohRecorded struct {
	rel tested.Release
	tr  *trajectory.Trajectory
}

// ohRecordings are the tested releases' fixtures.
func ohRecordings(t *testing.T) []ohRecorded {
	var out []ohRecorded
	for _, rel := range tested.Of(openhands.AgentName) {
		src := filepath.Join(projectRoot(t), "trajectory", "openhands", "testdata", "recorded", rel.Version, ohRecording)
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatalf("%s: no recording of this release: %v", rel.Version, err)
		}
		tr, err := openhands.New().Decode(bytes.NewReader(data), trajectory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ohRecorded{rel, tr})
	}
	return out
}

// pvisorOH runs `pvisor replay` on a recording at after-step n in a fresh
// copy of its initial repo and returns the work dir (outputs in out/r) and
// what pvisor printed.
func pvisorOH(t *testing.T, pvisor string, rel tested.Release, n int, args ...string) (string, []byte, error) {
	dir := filepath.Join(projectRoot(t), "trajectory", "openhands", "testdata", "recorded", rel.Version)
	work := t.TempDir()
	ws := filepath.Join(work, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xzf", filepath.Join(dir, "repo.tar.gz"), "-C", ws).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v\n%s", err, out)
	}
	cmd := exec.Command(pvisor, append([]string{"replay", "--agent", openhands.AgentName, "--trajectory", filepath.Join(dir, ohRecording),
		"--after-step", strconv.Itoa(n), "--workspace", ws, "--run-id", "r", "--state-dir", filepath.Join(work, "state"),
		"--output-dir", filepath.Join(work, "out")}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + work, "LANG=C.UTF-8", "TERM=dumb", "GIT_CONFIG_NOSYSTEM=1"}
	stdout, err := cmd.Output()
	return work, stdout, err
}

// TestOpenHandsContinueEveryStep continues each recording at every
// after-step with the release that wrote it, through the bridge with the
// recorded upstream, in a loopback-only namespace: the agent finishes, the
// first request is the projection of the rebuilt events (the envelope
// forwards nothing else), every replayed result is what OpenHands returned
// (workspace path mapped), its next action calls the recorded tools with
// the recorded arguments, and no saved file holds the bridge token.
func TestOpenHandsContinueEveryStep(t *testing.T) {
	pvisor := pvisorBinary(t)
	for _, r := range ohRecordings(t) {
		rel, tr := r.rel, r.tr
		t.Run(rel.Version, func(t *testing.T) {
			bin := releaseBin(t, rel)
			for n := 1; n < len(tr.Steps()); n++ { // the last step is finish
				t.Run("after-"+strconv.Itoa(n), func(t *testing.T) { continueOH(t, pvisor, bin, rel, n) })
			}
		})
	}
}

func continueOH(t *testing.T, pvisor, bin string, rel tested.Release, n int) {
	enterLoopbackNetns(t)
	work, stdout, _ := pvisorOH(t, pvisor, rel, n, "--upstream", "recorded", "--agent-entrypoint", bin)
	line := checkRunnerContinued(t, work, stdout)
	if q, st := gjson.GetBytes(line, "quality").Str, gjson.GetBytes(line, "metadata.continuation.execution_status").Str; q != "verified" || st != "finished" {
		t.Fatalf("quality %q, execution_status %q: %s", q, st, line)
	}
	var comps []struct {
		CallID     string `json:"call_id"`
		Exact      bool   `json:"exact"`
		Normalized *bool  `json:"normalized_exact"`
		Diff       string `json:"diff"`
	}
	b, err := os.ReadFile(filepath.Join(work, "out", "r", "observation-comparison.json"))
	if err != nil || json.Unmarshal(b, &comps) != nil || len(comps) == 0 {
		t.Fatalf("observation-comparison.json: %v", err)
	}
	for _, c := range comps {
		if !c.Exact && (c.Normalized == nil || !*c.Normalized) {
			t.Errorf("call %s is not what OpenHands returned:\n%s", c.CallID, c.Diff)
		}
	}
	cont, err := os.ReadFile(filepath.Join(work, "out", "r", "native", "continued-trajectory.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := openhands.New().Decode(bytes.NewReader(cont), trajectory.Options{})
	if err != nil || len(tr.Steps()) <= n {
		t.Fatalf("the continued conversation decodes to %v steps (%v)", len(tr.Steps()), err)
	}
	_ = filepath.WalkDir(filepath.Join(work, "state"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("pvisor-bridge-")) {
			t.Errorf("%s holds a bridge token", p)
		}
		return nil
	})
}

// TestOpenHandsTamperedRefused: when what the runner reopens differs from
// the rebuilt conversation (its copy is edited before the SDK reads it),
// the first request is refused: exit 40, nothing forwarded.
func TestOpenHandsTamperedRefused(t *testing.T) {
	rels := tested.Of(openhands.AgentName)
	if len(rels) == 0 {
		t.Fatal("no tested openhands-sdk release")
	}
	rel := rels[len(rels)-1]
	bin := releaseBin(t, rel)
	pvisor := pvisorBinary(t)
	enterLoopbackNetns(t)
	venv := filepath.Join(t.TempDir(), "bin")
	os.MkdirAll(venv, 0o755)
	py := filepath.Join(venv, "python")
	os.WriteFile(py, []byte("#!/bin/sh\n[ -f \"$HOME/rebuilt-events.jsonl\" ] && sed -i 's/greting/grEting/g' \"$HOME/rebuilt-events.jsonl\"\n"+
		"exec "+ohVenvPython(bin)+" \"$@\"\n"), 0o755)
	script, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := bytes.Cut(script, []byte("\n"))
	entry := filepath.Join(venv, "openhands-sdk")
	os.WriteFile(entry, append([]byte("#!"+py+"\n"), body...), 0o755)
	_, stdout, err := pvisorOH(t, pvisor, rel, 2, "--upstream", "recorded", "--agent-entrypoint", entry)
	checkTamperRefused(t, stdout, err)
}
