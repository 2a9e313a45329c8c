package openhands

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const corpusDir = "../../testdata/trajectories/openhands"

// refused lists the corpus files Decode must refuse, with the error.
var refused = map[string]formattest.Refusal{
	"ohands_multi_swe_bench_output.jsonl":       formattest.Unsupported(2, "this output.jsonl holds more than one instance"),
	"ohands_resolver_mock_output.jsonl":         formattest.Unsupported(2, "this output.jsonl holds more than one instance"),
	"ohsdk_v1_11_5_cli_default_base_state.json": formattest.Unsupported(1, "base_state.json, which holds no events"),
}

var corpus = formattest.Corpus{
	Format:  New(),
	Globs:   []string{corpusDir + "/*.json", corpusDir + "/*.jsonl"},
	Refused: refused,
	Bad:     badInputs,
}

func decodeBytes(t testing.TB, data []byte) (*trajectory.Trajectory, error) {
	t.Helper()
	return New().Decode(bytes.NewReader(data), trajectory.Options{})
}

func TestCorpusGolden(t *testing.T) { corpus.TestGolden(t) }

func TestContent(t *testing.T) {
	_, tr := formattest.DecodeFile(t, New(), filepath.Join(corpusDir, "ohands_multi_swe_bench_output.instance1.jsonl"))
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
	if d := cmp.Diff(want, formattest.Summary(tr)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got := New().PrefixModelTurns(tr, 2); got != 2 {
		t.Errorf("PrefixModelTurns(2) = %d", got)
	}
}

func TestWritePrefix(t *testing.T) {
	ignoreLoc := cmpopts.IgnoreFields(trajectory.ToolCall{}, "Locator")
	ignoreObsLoc := cmpopts.IgnoreFields(trajectory.Observation{}, "Locator")
	corpus.ForEach(t, func(t *testing.T, name string, data []byte, tr *trajectory.Trajectory) {
		if tr.Format == FormatLegacyEvalOutput && len(tr.Steps()) > 0 {
			err := New().WritePrefix(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), tr, 1)
			formattest.CheckError(t, err, formattest.Unsupported(0, "flat OpenHands events"))
			return
		}
		last := len(tr.Steps())
		want := FormatEvents // an output.jsonl line's history becomes an array
		if tr.Format == FormatV1Events {
			want = FormatV1Events
		}
		formattest.CheckPrefixRoundTrip(t, New(), data, tr, func(t testing.TB, n int, cut []byte, pt *trajectory.Trajectory) {
			if pt.Format != want {
				t.Errorf("prefix format %s", pt.Format)
			}
			if bytes.Contains(cut, []byte(`"action": "system"`)) || bytes.Contains(cut, []byte(`"action":"system"`)) {
				t.Errorf("step %d: prefix kept the system action", n)
			}
			if name == "ohands_trajs_wrong_initial_state.json" && n == last {
				// Nothing dropped: the prefix is the file up to the
				// boundary's last event, closed as Python would.
				want := string(data[:bytes.LastIndex(data, []byte(",\n  {"))]) + "\n]\n"
				if d := cmp.Diff(want, string(cut)); d != "" {
					t.Errorf("prefix is not the original layout:\n%s", d)
				}
			}
		}, ignoreLoc, ignoreObsLoc)
	})
}

func TestWritePrefixNeedsUserMessage(t *testing.T) {
	src := `[{"id":1,"source":"agent","action":"run","args":{"command":"ls"}},
{"id":2,"source":"agent","observation":"run","cause":1,"content":"","extras":{}}]`
	tr, err := decodeBytes(t, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	err = New().WritePrefix(&bytes.Buffer{}, strings.NewReader(src), int64(len(src)), tr, 1)
	formattest.CheckError(t, err, formattest.Malformed(1, "must start with the user's task message"))
}

func TestDetect(t *testing.T) { formattest.CheckDetect(t, New(), filepath.Dir(corpusDir)) }

func TestCheckReplayable(t *testing.T) {
	tests := []struct {
		name, args string
		want       string // "" = replayable
	}{
		{"run", `{"command":"ls","is_input":false}`, ""},
		{"read", `{"path":"/f","impl_source":"oh_aci"}`, ""},
		{"edit", `{"path":"/f","command":"str_replace","impl_source":"oh_aci"}`, ""},
		{"edit", `{"path":"/f","content":"x","impl_source":"llm_based_edit"}`, "draft-editor model"},
		{"write", `{"path":"/f","content":"x"}`, "FileWriteAction"},
		{"read", `{"path":"/f","impl_source":"default"}`, "only oh_aci reads"},
		{"edit", `{"path":"/f","command":"view"}`, "only oh_aci edits"},
		{"run", `{"command":"","is_input":false}`, "empty command"},
		{"run", `{"command":"y","is_input":true}`, "sends input"},
		{"terminal", `{"command":"ls","reset":true}`, "resets"},
		{"think", `{"thought":"hm"}`, ""},
		{"run_ipython", `{"code":"1+1"}`, "Jupyter kernel"},
		{"browse", `{"url":"http://x"}`, "browser"},
		{"browse_interactive", `{"browser_actions":"click"}`, "browser"},
		{"call_tool_mcp", `{"name":"x"}`, "MCP"},
		{"delegate", `{"agent":"x"}`, "sub-agent"},
		{"finish", `{}`, "ends the episode"},
		{"task_tracking", `{}`, `not one the replay re-executes`},
		// V1 tool names.
		{"terminal", `{"command":"ls","is_input":false,"kind":"TerminalAction"}`, ""},
		{"file_editor", `{"command":"view","path":"/w/a","kind":"FileEditorAction"}`, ""},
		{"file_editor", `{"command":"undo_edit","path":"/w/a","kind":"FileEditorAction"}`, ""},
		{"file_editor", `{"command":"rewrite","path":"/w/a"}`, `file editor command "rewrite"`},
		{"task_tracker", `{"command":"view"}`, "conversation's state"},
		{"browser_navigate", `{"url":"http://x"}`, "browser"},
	}
	for _, tt := range tests {
		formattest.CheckReplayable(t, New(), tt.name, tt.args, tt.want)
	}
}

// An action of step 2 written before step 1's last observation must stay
// out of the step-1 prefix, and the step-2 prefix keeps both.
func TestWritePrefixInterleaved(t *testing.T) {
	tcm := func(call, resp string) string {
		return `"tool_call_metadata":{"tool_call_id":"` + call + `","model_response":{"id":"` + resp + `"}}`
	}
	src := `[
{"id":0,"source":"user","action":"message","args":{"content":"task"}},
{"id":1,"source":"agent","action":"run","args":{"command":"ls"},` + tcm("a", "r1") + `},
{"id":2,"source":"agent","observation":"run","cause":1,"content":"x","extras":{}},
{"id":3,"source":"agent","action":"read","args":{"path":"/f"},` + tcm("b", "r1") + `},
{"id":4,"source":"agent","action":"run","args":{"command":"pwd"},` + tcm("c", "r2") + `},
{"id":5,"source":"agent","observation":"read","cause":3,"content":"y","extras":{}},
{"id":6,"source":"agent","observation":"run","cause":4,"content":"/","extras":{}}
]`
	tr, err := decodeBytes(t, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		step int
		ids  []int64
	}{{1, []int64{0, 1, 2, 3, 5}}, {2, []int64{0, 1, 2, 3, 4, 5, 6}}} {
		var out bytes.Buffer
		if err := New().WritePrefix(&out, strings.NewReader(src), int64(len(src)), tr, tc.step); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, e := range gjson.ParseBytes(out.Bytes()).Array() {
			ids = append(ids, e.Get("id").Int())
		}
		if d := cmp.Diff(tc.ids, ids); d != "" {
			t.Errorf("step %d prefix events (-want +got):\n%s", tc.step, d)
		}
		pt, err := decodeBytes(t, out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if got := len(pt.Steps()); got != tc.step {
			t.Errorf("step %d prefix decodes to %d steps", tc.step, got)
		}
	}
}

// --instance picks one line of a multi-instance output.jsonl: the decoded
// trajectory and its prefix are those of that line on its own.
func TestInstance(t *testing.T) {
	multi, err := os.ReadFile(filepath.Join(corpusDir, "ohands_multi_swe_bench_output.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	insts, err := Instances(bytes.NewReader(multi))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range insts {
		ids = append(ids, fmt.Sprintf("%s@%d", in.ID, in.Line))
	}
	if d := cmp.Diff([]string{"ponylang__ponyc-4595@1", "ponylang__ponyc-4593@2", "ponylang__ponyc-4588@3"}, ids); d != "" {
		t.Errorf("instances (-want +got):\n%s", d)
	}
	for _, tc := range []struct{ id, single string }{
		{"ponylang__ponyc-4595", "ohands_multi_swe_bench_output.instance1.jsonl"},
		{"ponylang__ponyc-4593", "ohands_multi_swe_bench_output.instance2.jsonl"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			one, err := os.ReadFile(filepath.Join(corpusDir, tc.single))
			if err != nil {
				t.Fatal(err)
			}
			want, err := decodeBytes(t, one)
			if err != nil {
				t.Fatal(err)
			}
			got, err := New().Decode(bytes.NewReader(multi), trajectory.Options{Instance: tc.id})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(formattest.Summary(want), formattest.Summary(got)); d != "" {
				t.Errorf("(-single +selected):\n%s", d)
			}
			var wp, gp bytes.Buffer
			if err := New().WritePrefix(&wp, bytes.NewReader(one), int64(len(one)), want, 1); err != nil {
				t.Fatal(err)
			}
			if err := New().WritePrefix(&gp, bytes.NewReader(multi), int64(len(multi)), got, 1); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(wp.Bytes(), gp.Bytes()) {
				t.Errorf("prefix of the selected instance differs from the single-instance file's")
			}
		})
	}
	_, err = New().Decode(bytes.NewReader(multi), trajectory.Options{Instance: "nope"})
	formattest.CheckError(t, err, formattest.Malformed(0, `no instance "nope" in this output.jsonl (it has ponylang__ponyc-4595, ponylang__ponyc-4593, ponylang__ponyc-4588)`))
}

// pVisor's contract case: actions without response ids are separate steps;
// step 1's observation arrives after step 2's action and stays, step 2's
// action and observation do not.
func TestWritePrefixLateObservation(t *testing.T) {
	src := `[
{"id":0,"source":"user","action":"message","args":{"content":"prepare complete batch"}},
{"id":7,"source":"agent","action":"run","args":{"command":"printf selected"}},
{"id":9,"source":"agent","action":"run","args":{"command":"printf next"}},
{"id":12,"source":"environment","observation":"run","cause":7,"message":"historical observation\n","args":{"metadata":{"exit_code":7}}},
{"id":13,"source":"environment","observation":"run","cause":9,"message":"future observation","args":{"metadata":{"exit_code":0}}}
]`
	tr, err := decodeBytes(t, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := New().WritePrefix(&out, strings.NewReader(src), int64(len(src)), tr, 1); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range gjson.ParseBytes(out.Bytes()).Array() {
		ids = append(ids, e.Get("id").Int())
	}
	if d := cmp.Diff([]int64{0, 7, 12}, ids); d != "" {
		t.Errorf("prefix events (-want +got):\n%s", d)
	}
}
