package openhands

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
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pvisor/pvisor/trajectory"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

const corpusDir = "../../testdata/trajectories/openhands"

// refused lists the corpus files Decode must refuse, with the error.
var refused = map[string]struct {
	kind trajectory.Kind
	line int
	want string
}{
	"ohands_multi_swe_bench_output.jsonl": {trajectory.Unsupported, 2,
		"this output.jsonl holds more than one instance"},
	"ohands_resolver_mock_output.jsonl": {trajectory.Unsupported, 2,
		"this output.jsonl holds more than one instance"},
	"ohsdk_goal_events.jsonl":                   {trajectory.Unsupported, 1, v1Msg},
	"ohsdk_v1_11_5_cli_default_base_state.json": {trajectory.Unsupported, 1, v1Msg},
}

func corpusFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.json", "*.jsonl"} {
		m, err := filepath.Glob(filepath.Join(corpusDir, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no corpus files in %s", corpusDir)
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
			s := c.Name + "(" + c.ID + ")@" + fmt.Sprint(c.Locator.First)
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
		fmt.Fprintf(&b, "#%d step=%d complete=%v %s %d-%d text=%d calls=[%s]\n",
			i+1, a.Step, a.Complete(), a.Locator.Unit, a.Locator.First, a.Locator.Last, len(a.Text), strings.Join(calls, " "))
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
			if want, ok := refused[name]; ok {
				checkErr(t, err, want.kind, want.line, want.want)
				return
			}
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

func TestContent(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpusDir, "ohands_multi_swe_bench_output.instance1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := decodeBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Version != "0.35.0" || tr.SessionID != "ponylang__ponyc-4595" {
		t.Errorf("version %q session %q", tr.Version, tr.SessionID)
	}
	first := tr.Actions[0]
	c := first.Calls[0]
	if c.Name != ActionRun || c.ID != "toolu_01" || !strings.HasPrefix(string(c.Arguments), `{"command":`) ||
		strings.Contains(string(c.Arguments), `"thought"`) {
		t.Errorf("first call = %s %s %s", c.Name, c.ID, c.Arguments)
	}
	if first.Text == "" || !strings.HasPrefix(c.Observation.Content, "total ") && c.Observation.Content == "" {
		t.Errorf("text %q observation %.80q", first.Text, c.Observation.Content)
	}
	// think keeps its thought: it is the argument.
	for _, a := range tr.Actions {
		for _, c := range a.Calls {
			if c.Name == ActionThink && !strings.Contains(string(c.Arguments), `"thought"`) {
				t.Errorf("think lost its argument: %s", c.Arguments)
			}
		}
	}
}

// Parallel calls of one response arrive as action, observation, action,
// observation; they form one batch.
func TestParallelCalls(t *testing.T) {
	tcm := func(call, resp string) string {
		return `"tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"` + call +
			`","model_response":{"id":"` + resp + `","choices":[{"message":{"content":"look"}}]},"total_calls_in_response":2}`
	}
	src := `[
{"id":0,"source":"user","action":"message","args":{"content":"task"}},
{"id":1,"source":"agent","action":"run","args":{"command":"ls","thought":"look"},` + tcm("a", "r1") + `},
{"id":2,"source":"agent","observation":"run","cause":1,"content":"x","extras":{"metadata":{"exit_code":0}}},
{"id":3,"source":"agent","action":"read","args":{"path":"/f"},` + tcm("b", "r1") + `},
{"id":4,"source":"agent","observation":"read","cause":3,"content":"y","extras":{}},
{"id":5,"source":"agent","action":"run","args":{"command":"false"},` + tcm("c", "r2") + `},
{"id":6,"source":"agent","observation":"run","cause":5,"content":"","extras":{"metadata":{"exit_code":1}}},
{"id":7,"source":"agent","action":"message","args":{"content":"done?","wait_for_response":true}},
{"id":8,"source":"user","action":"message","args":{"content":"yes"}},
{"id":9,"source":"agent","action":"finish","args":{"final_thought":"ok","thought":""}}
]`
	tr, err := decodeBytes(t, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := `agent=openhands version="" session="" format=v0-events lines=10 actions=4 steps=2
#1 step=1 complete=true event 1-4 text=4 calls=[run(a)@1->2 read(b)@3->4]
#2 step=2 complete=true event 5-6 text=4 calls=[run(c)@5->6!]
#3 step=0 complete=false event 7-7 text=5 calls=[]
#4 step=0 complete=false event 9-9 text=0 calls=[finish(9)@9->none]
`
	if d := cmp.Diff(want, summary(tr)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got := New().PrefixModelTurns(tr, 2); got != 2 {
		t.Errorf("PrefixModelTurns(2) = %d", got)
	}
}

func TestWritePrefix(t *testing.T) {
	ignoreLoc := cmpopts.IgnoreFields(trajectory.ToolCall{}, "Locator")
	ignoreObsLoc := cmpopts.IgnoreFields(trajectory.Observation{}, "Locator")
	for _, path := range corpusFiles(t) {
		name := filepath.Base(path)
		if _, ok := refused[name]; ok {
			continue
		}
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
			if len(steps) == 0 {
				err := New().WritePrefix(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), tr, 1)
				checkErr(t, err, trajectory.Malformed, 0, "trajectory has 0 complete steps")
				return
			}
			if tr.Format == FormatLegacyEvalOutput {
				err := New().WritePrefix(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), tr, 1)
				checkErr(t, err, trajectory.Unsupported, 0, "flat OpenHands events")
				return
			}
			for _, n := range []int{1, 2, len(steps) / 2, len(steps) - 1, len(steps)} {
				if n < 1 || n > len(steps) {
					continue
				}
				var buf bytes.Buffer
				if err := New().WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, n); err != nil {
					t.Fatalf("step %d: %v", n, err)
				}
				pt, err := decodeBytes(t, buf.Bytes())
				if err != nil {
					t.Fatalf("step %d: prefix does not decode: %v\n%.300s", n, err, buf.Bytes())
				}
				if pt.Format != FormatEvents {
					t.Errorf("prefix format %s", pt.Format)
				}
				if got := len(pt.Steps()); got != n {
					t.Fatalf("step %d: prefix decodes to %d steps", n, got)
				}
				if got, want := len(pt.Actions), New().PrefixModelTurns(tr, n); got != want {
					t.Errorf("step %d: prefix has %d model turns, PrefixModelTurns says %d", n, got, want)
				}
				for i, s := range pt.Steps() {
					if d := cmp.Diff(steps[i].Calls, s.Calls, ignoreLoc, ignoreObsLoc); d != "" {
						t.Fatalf("step %d of prefix %d differs:\n%s", i+1, n, d)
					}
				}
				if bytes.Contains(buf.Bytes(), []byte(`"action": "system"`)) || bytes.Contains(buf.Bytes(), []byte(`"action":"system"`)) {
					t.Errorf("step %d: prefix kept the system action", n)
				}
				if name == "ohands_trajs_wrong_initial_state.json" && n == len(steps) {
					// Nothing dropped: the prefix is the file up to the
					// boundary's last event, closed as Python would.
					want := string(data[:bytes.LastIndex(data, []byte(",\n  {"))]) + "\n]\n"
					if d := cmp.Diff(want, buf.String()); d != "" {
						t.Errorf("prefix is not the original layout:\n%s", d)
					}
				}
			}
			if err := New().WritePrefix(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), tr, len(steps)+1); err == nil {
				t.Errorf("WritePrefix after the last step succeeded")
			}
		})
	}
}

func TestWritePrefixNeedsUserMessage(t *testing.T) {
	src := `[{"id":1,"source":"agent","action":"run","args":{"command":"ls"}},
{"id":2,"source":"agent","observation":"run","cause":1,"content":"","extras":{}}]`
	tr, err := decodeBytes(t, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	err = New().WritePrefix(&bytes.Buffer{}, strings.NewReader(src), int64(len(src)), tr, 1)
	checkErr(t, err, trajectory.Malformed, 1, "must start with the user's task message")
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
		"claude":     `{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/x","sessionId":"s","version":"2.0.14","type":"user","message":{"role":"user","content":"hi"},"uuid":"u","timestamp":"2025-10-01T00:00:00.000Z"}`,
		"codex":      `{"timestamp":"2025-09-25T01:22:20.083Z","type":"session_meta","payload":{"id":"0199","cwd":"/x"}}`,
		"pi":         `{"type":"session","version":3,"id":"0199","timestamp":"2025-12-01T00:00:00.000Z","cwd":"/x"}`,
		"opencode":   `{"type":"step_start","timestamp":1767445000100,"sessionID":"ses_1","part":{"type":"step-start"}}`,
		"oc-export":  `{"info":{"id":"ses_1","title":"x"},"messages":[{"info":{"role":"user"},"parts":[]}]}`,
		"mini-v1":    "{\n  \"info\": {\n    \"exit_status\": \"Submitted\",\n    \"mini_version\": \"1.15.0\"},\n  \"messages\": [\n    {\"role\": \"system\", \"content\": \"x\"}",
		"mini-bare":  "[\n  {\n    \"role\": \"system\",\n    \"content\": \"You are a helpful assistant\"\n  }",
		"swe-agent":  `{"trajectory":[{"action":"ls","observation":"x"}],"history":[{"role":"system","content":"x"}],"info":{}}`,
		"empty":      ``,
		"array-nums": `[1,2,3]`,
	}
	for name, head := range others {
		if New().Detect([]byte(head)) {
			t.Errorf("%s: detected as openhands", name)
		}
	}
	single := "{\n  \"id\": 4,\n  \"timestamp\": \"2025-01-20T20:29:13\",\n  \"source\": \"agent\",\n  \"action\": \"run\",\n  \"args\": {}\n}"
	if !New().Detect([]byte(single)) {
		t.Errorf("single V0 event file not detected (Decode explains why it is refused)")
	}
	cut := `[{"id":0,"timestamp":"2025-05-01T00:00:00","source":"agent","message":"You are OpenHands agent, a helpful AI`
	if !New().Detect([]byte(cut)) {
		t.Errorf("array whose first event is cut by the head not detected")
	}
}

func TestCheckReplayable(t *testing.T) {
	tests := []struct {
		name, args string
		want       string // "" = replayable
	}{
		{"run", `{"command":"ls","is_input":false}`, ""},
		{"read", `{"path":"/f","impl_source":"oh_aci"}`, ""},
		{"edit", `{"path":"/f","command":"str_replace","impl_source":"oh_aci"}`, ""},
		{"edit", `{"path":"/f","content":"x","impl_source":"llm_based_edit"}`, "draft-editor model"},
		{"write", `{"path":"/f","content":"x"}`, ""},
		{"think", `{"thought":"hm"}`, ""},
		{"run_ipython", `{"code":"1+1"}`, ""},
		{"browse", `{"url":"http://x"}`, "browser"},
		{"browse_interactive", `{"browser_actions":"click"}`, "browser"},
		{"call_tool_mcp", `{"name":"x"}`, "MCP"},
		{"delegate", `{"agent":"x"}`, "sub-agent"},
		{"finish", `{}`, "ends the episode"},
		{"task_tracking", `{}`, `not one the replay re-executes`},
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
}

// No other agent's test file is claimed.
func TestDetectOthers(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/trajectories/*")
	for _, dir := range dirs {
		if filepath.Base(dir) == trajectory.OpenHands {
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
