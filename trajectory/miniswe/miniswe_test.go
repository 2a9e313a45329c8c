package miniswe

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

const corpusDir = "../../testdata/trajectories/mini-swe-agent"

func corpusFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.traj.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files in %s: %v", corpusDir, err)
	}
	return files
}

func decodeBytes(t testing.TB, data []byte) (*trajectory.Trajectory, error) {
	t.Helper()
	return New().Decode(bytes.NewReader(data), trajectory.Options{})
}

// summary is the compact, reviewable form of a decode used by the goldens.
func summary(tr *trajectory.Trajectory) string {
	var b strings.Builder
	fmt.Fprintf(&b, "agent=%s version=%q session=%q format=%s lines=%d actions=%d steps=%d\n",
		tr.Agent, tr.Version, tr.SessionID, tr.Format, tr.Lines, len(tr.Actions), len(tr.Steps()))
	for i := range tr.Actions {
		a := &tr.Actions[i]
		var calls []string
		for _, c := range a.Calls {
			s := fmt.Sprintf("%s(%s)@%d", c.Name, c.ID, c.Locator.First)
			if c.Observation == nil {
				s += "->none"
			} else {
				s += "->" + fmt.Sprint(c.Observation.Locator.First)
				if c.Observation.IsError {
					s += "!"
				}
			}
			calls = append(calls, s)
		}
		fmt.Fprintf(&b, "#%d step=%d complete=%v %s %d-%d text=%d reasoning=%d calls=[%s]\n",
			i+1, a.Step, a.Complete(), a.Locator.Unit, a.Locator.First, a.Locator.Last, len(a.Text), len(a.Reasoning),
			strings.Join(calls, " "))
	}
	return b.String()
}

func TestCorpusGolden(t *testing.T) {
	for _, path := range corpusFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := decodeBytes(t, data)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			got := summary(tr)
			golden := filepath.Join("testdata", "golden", name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if d := cmp.Diff(string(want), got); d != "" {
				t.Errorf("summary differs from %s (-want +got):\n%s", golden, d)
			}
			if err := invariants(tr); err != nil {
				t.Error(err)
			}
			lean, err := New().Decode(bytes.NewReader(data), trajectory.Options{SkipObservationContent: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(got, summary(lean)); d != "" {
				t.Errorf("lean decode differs in shape:\n%s", d)
			}
		})
	}
}

func checkErr(t *testing.T, err error, kind trajectory.Kind, line int, want string) {
	t.Helper()
	var e *trajectory.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *trajectory.Error containing %q, got %v", want, err)
	}
	if e.Kind != kind || e.Line != line || !strings.Contains(e.Error(), want) {
		t.Errorf("got kind=%d line=%d %q; want kind=%d line=%d containing %q", e.Kind, e.Line, e.Error(), kind, line, want)
	}
}

// invariants holds for every successful decode: steps are numbered 1..n in
// order and every call of a step has its observation, inside the step's span.
func invariants(tr *trajectory.Trajectory) error {
	n := 0
	for i := range tr.Actions {
		a := &tr.Actions[i]
		if a.Step == 0 {
			if a.Complete() {
				return fmt.Errorf("action %d is complete but has no step", i)
			}
			continue
		}
		n++
		if a.Step != n {
			return fmt.Errorf("action %d has step %d, want %d", i, a.Step, n)
		}
		for _, c := range a.Calls {
			if c.Observation == nil {
				return fmt.Errorf("step %d call %s has no observation", a.Step, c.ID)
			}
			if c.Locator.First < a.Locator.First || c.Observation.Locator.Last > a.Locator.Last {
				return fmt.Errorf("step %d: action locator %v does not cover call %s", a.Step, a.Locator, c.ID)
			}
		}
	}
	return nil
}

func decodeFile(t *testing.T, name string) *trajectory.Trajectory {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := decodeBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestContent(t *testing.T) {
	// v1: the command is the fenced block, stripped; the observation is the
	// next user message as the model saw it.
	tr := decodeFile(t, "gruckion_django__django-16255.traj.json")
	c := tr.Actions[0].Calls[0]
	if c.Name != ToolBash || c.ID != "message-2" || string(c.Arguments) != `{"command":"ls -R django/contrib/sitemaps"}` {
		t.Errorf("first call = %s %s %s", c.Name, c.ID, c.Arguments)
	}
	if !strings.HasPrefix(c.Observation.Content, "<returncode>0</returncode>\n<output>\n") {
		t.Errorf("observation = %.80q", c.Observation.Content)
	}
	if tr.Version != "1.15.0" || tr.SessionID != "django__django-16255" || tr.Format != FormatV1 {
		t.Errorf("version %q session %q format %q", tr.Version, tr.SessionID, tr.Format)
	}

	// v1 interactive: content as a list of text parts.
	tr = decodeFile(t, "minitrajweb_example_instance.traj.json")
	if o := tr.Actions[0].Calls[0].Observation.Content; !strings.HasPrefix(o, "<returncode>0</returncode>\n<output>\ntotal 1232") {
		t.Errorf("list-of-parts observation = %.80q", o)
	}

	// v2 tool calls: parallel calls answered by id, the model-visible
	// content (not extra.raw_output) is the observation.
	tr = decodeFile(t, "generated_mini-2.4.6_toolcall.traj.json")
	a := tr.Actions[0]
	if len(a.Calls) != 2 || a.Calls[0].ID != "call_a1" || string(a.Calls[1].Arguments) != `{"command": "cat missing.txt"}` {
		t.Fatalf("parallel batch = %+v", a.Calls)
	}
	if o := a.Calls[1].Observation; !o.IsError || !strings.HasPrefix(o.Content, "<returncode>1</returncode>") {
		t.Errorf("failing call observation = %+v", o)
	}
	if fe := tr.Actions[2]; len(fe.Calls) != 0 || fe.Text != "I think I am done." {
		t.Errorf("format error response = %+v", fe)
	}

	// v2 Responses API.
	tr = decodeFile(t, "generated_mini-2.4.6_responses.traj.json")
	if a := tr.Actions[0]; a.Text != "Looking." || len(a.Calls) != 2 || a.Calls[1].ID != "fc_2" ||
		a.Calls[1].Observation == nil || string(a.Calls[1].Arguments) != `{"command": "printf hello > hello.txt"}` {
		t.Errorf("responses batch = %+v", a)
	}
}

func TestWritePrefix(t *testing.T) {
	for _, path := range corpusFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := decodeBytes(t, data)
			if err != nil {
				t.Fatal(err)
			}
			steps := tr.Steps()
			for _, n := range []int{1, 2, len(steps) / 2, len(steps) - 1, len(steps)} {
				if n < 1 || n > len(steps) {
					continue
				}
				var buf bytes.Buffer
				if err := New().WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, n); err != nil {
					t.Fatalf("step %d: %v", n, err)
				}
				last := steps[n-1].Locator.Last
				pt, err := decodeBytes(t, buf.Bytes())
				if err != nil {
					t.Fatalf("step %d: prefix does not decode: %v", n, err)
				}
				if pt.Lines != last+1 {
					t.Errorf("step %d: prefix has %d messages, want %d", n, pt.Lines, last+1)
				}
				if pt.Format != tr.Format || pt.Version != tr.Version || pt.SessionID != tr.SessionID {
					t.Errorf("step %d: prefix lost info: %s %s %s", n, pt.Format, pt.Version, pt.SessionID)
				}
				if got := len(pt.Steps()); got != n {
					t.Fatalf("step %d: prefix decodes to %d steps", n, got)
				}
				if got, want := len(pt.Actions), New().PrefixModelTurns(tr, n); got != want {
					t.Errorf("step %d: prefix has %d model turns, PrefixModelTurns says %d", n, got, want)
				}
				for i, s := range pt.Steps() {
					if d := cmp.Diff(steps[i].Calls, s.Calls); d != "" {
						t.Fatalf("step %d of prefix %d differs:\n%s", i+1, n, d)
					}
				}
			}
			if err := New().WritePrefix(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), tr, len(steps)+1); err == nil {
				t.Errorf("WritePrefix after the last step succeeded")
			}
		})
	}
}

// The prefix is the original bytes minus the later messages.
func TestWritePrefixBytes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpusDir, "generated_mini-2.4.6_textbased.traj.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := decodeBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := New().WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, 1); err != nil {
		t.Fatal(err)
	}
	// Messages 0-3 kept; 4 (the format error) onwards cut.
	cut := bytes.Index(data, []byte(",\n    {\n      \"role\": \"user\",\n      \"content\": \"Please always"))
	end := bytes.Index(data, []byte("\n  ],\n  \"trajectory_format\""))
	if cut < 0 || end < 0 {
		t.Fatal("layout of the test file changed")
	}
	want := string(data[:cut]) + string(data[end:])
	if d := cmp.Diff(want, buf.String()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestDetect(t *testing.T) {
	for _, path := range corpusFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 64<<10 {
			data = data[:64<<10]
		}
		if !New().Detect(data) {
			t.Errorf("%s: not detected", filepath.Base(path))
		}
	}
	// The heads of the other agents' files (from /work/shared/corpus).
	others := map[string]string{
		"claude":       `{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/x","sessionId":"s","version":"2.0.14","type":"user","message":{"role":"user","content":"hi"},"uuid":"u","timestamp":"2025-10-01T00:00:00.000Z"}`,
		"codex":        `{"timestamp":"2025-09-25T01:22:20.083Z","type":"session_meta","payload":{"id":"0199","cwd":"/x"}}`,
		"pi":           `{"type":"session","version":3,"id":"0199","timestamp":"2025-12-01T00:00:00.000Z","cwd":"/x"}`,
		"opencode":     `{"type":"step_start","timestamp":1767445000100,"sessionID":"ses_1","part":{"type":"step-start"}}`,
		"oc-export":    `{"info":{"id":"ses_1","title":"x"},"messages":[{"info":{"role":"user"},"parts":[]}]}`,
		"openhands":    "[\n  {\n    \"id\": 0,\n    \"source\": \"user\",\n    \"action\": \"message\",\n    \"args\": {}\n  }",
		"oh-eval":      `{"instance_id":"x","instruction":"y","metadata":{"agent_class":"CodeActAgent"},"history":[{"id":0,"source":"user","action":"message"}]}`,
		"oh-v1":        `{"id":"03d5","timestamp":"t","source":"environment","key":"execution_status","value":"running","kind":"ConversationStateUpdateEvent"}`,
		"swe-agent":    `{"trajectory":[{"action":"ls","observation":"x"}],"history":[{"role":"system","content":"x"}],"info":{"exit_status":"submitted","submission":"x"}}`,
		"empty":        ``,
		"array-nums":   `[1,2,3]`,
		"role-unknown": `[{"role":"developer","content":"x"}]`,
	}
	for name, head := range others {
		if New().Detect([]byte(head)) {
			t.Errorf("%s: detected as mini-swe-agent", name)
		}
	}
	cut := "{\n  \"info\": {\n    \"model_stats\": {\"instance_cost\": 0.0, \"api_calls\": 3},\n    \"config\": {\"agent\": {\"system_template\": \"You are a"
	if New().Detect([]byte(cut)) {
		t.Errorf("an info object cut before any mini marker was claimed")
	}
	if !New().Detect([]byte(cut[:60] + `"agent_type": "minisweagent.agents.default.DefaultAgent"`)) {
		t.Errorf("info with a minisweagent class path not detected")
	}
}

func TestCheckReplayable(t *testing.T) {
	tests := []struct {
		name, args string
		want       string // "" = replayable
	}{
		{"bash", `{"command":"ls -la"}`, ""},
		{"bash", `{"command": "cd /testbed && python -m pytest"}`, ""},
		{"bash", `{"command":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"}`,
			"submission command ends the episode; choose an earlier step"},
		{"bash", `{"command":"echo MINI_SWE_AGENT_FINAL_OUTPUT"}`, "submission command ends the episode"},
		{"bash", `{"cmd":"ls"}`, `no "command" string`},
		{"bash", `"ls"`, `no "command" string`},
		{"python", `{"code":"1"}`, `only the "bash" tool`},
	}
	for _, tt := range tests {
		err := New().CheckReplayable(&trajectory.ToolCall{ID: "c", Name: tt.name, Arguments: []byte(tt.args)})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %s: %v", tt.name, tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s %s: got %v, want error containing %q", tt.name, tt.args, err, tt.want)
		}
	}
	// A v1 submission is a complete step (its "observation" is the
	// submission message), so the prefix check must catch it.
	tr := decodeFile(t, "miniswe_testdata_local.traj.json")
	stale := trajectory.CheckPrefixTools(New(), tr, len(tr.Steps()))
	if len(stale) != 1 || stale[0].Step != 2 || !strings.Contains(stale[0].Error(), "submission command ends the episode") {
		t.Errorf("stale = %v", stale)
	}
}

// No other agent's test file is claimed.
func TestDetectOthers(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/trajectories/*")
	for _, dir := range dirs {
		if filepath.Base(dir) == trajectory.MiniSWE {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.json*"))
		for _, path := range files {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > 64<<10 {
				data = data[:64<<10]
			}
			if New().Detect(data) {
				t.Errorf("%s claimed", path)
			}
		}
	}
}
