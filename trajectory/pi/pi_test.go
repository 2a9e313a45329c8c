package pi

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const corpusDir = "../../testdata/trajectories/pi"

// refusal is the error a file must be refused with.
type refusal struct {
	kind trajectory.Kind
	line int
	msg  string
}

// refusedFiles are the corpus files this format must refuse, and why: the
// earendilpi file is an excerpt of session entries without the header line.
var refusedFiles = map[string]refusal{
	"earendilpi_personal-assistant_session-sample.jsonl": {trajectory.Malformed, 1, "pi session file has no header"},
}

// inputs lists the corpus copies and this package's own test files.
func inputs(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{corpusDir + "/*.json*", "testdata/*.json*"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) < 9 {
		t.Fatalf("only %d input files found", len(out))
	}
	return out
}

func decodeFile(t testing.TB, path string) (*trajectory.Trajectory, []byte, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
	return tr, data, err
}

// summary is the compact form a golden file holds.
func summary(t *trajectory.Trajectory) string {
	var b strings.Builder
	torn := "none"
	if t.TornTail != nil {
		torn = fmt.Sprintf("line %d (%d bytes at %d)", t.TornTail.Line, t.TornTail.Bytes, t.TornTail.Offset)
	}
	fmt.Fprintf(&b, "agent=%s format=%s session=%s version=%q lines=%d actions=%d steps=%d torn=%s\n",
		t.Agent, t.Format, t.SessionID, t.Version, t.Lines, len(t.Actions), len(t.Steps()), torn)
	for i, a := range t.Actions {
		fmt.Fprintf(&b, "action %d step=%d complete=%v loc=%s bytes=%d-%d text=%d reasoning=%d\n",
			i, a.Step, a.Complete(), a.Locator, a.Locator.StartByte, a.Locator.EndByte, len(a.Text), len(a.Reasoning))
		for _, c := range a.Calls {
			obs := "none"
			if o := c.Observation; o != nil {
				obs = fmt.Sprintf("%s content=%d error=%v", o.Locator, len(o.Content), o.IsError)
			}
			fmt.Fprintf(&b, "  call %s id=%s args=%dB at %s result: %s\n", c.Name, c.ID, len(c.Arguments), c.Locator, obs)
		}
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for _, path := range inputs(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			tr, _, err := decodeFile(t, path)
			if want, ok := refusedFiles[name]; ok {
				checkErr(t, err, want)
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			got := summary(tr)
			golden := filepath.Join("testdata", "golden", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if d := cmp.Diff(string(want), got); d != "" {
				t.Errorf("summary differs from %s (-want +got):\n%s", golden, d)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want refusal) {
	t.Helper()
	var te *trajectory.Error
	if !errors.As(err, &te) {
		t.Fatalf("got error %v (%T), want a *trajectory.Error containing %q", err, err, want.msg)
	}
	if te.Kind != want.kind || te.Line != want.line || !strings.Contains(te.Error(), want.msg) {
		t.Fatalf("got kind %d line %d %q; want kind %d line %d containing %q", te.Kind, te.Line, te.Error(), want.kind, want.line, want.msg)
	}
}

func TestDetect(t *testing.T) {
	root := filepath.Dir(corpusDir)
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(root, d.Name(), "*.json*"))
		for _, f := range files {
			head := readHead(t, f)
			if got, want := New().Detect(head), d.Name() == trajectory.Pi; got != want {
				t.Errorf("Detect(%s/%s) = %v, want %v", d.Name(), filepath.Base(f), got, want)
			}
		}
	}
	for _, f := range inputs(t) {
		if !New().Detect(readHead(t, f)) {
			t.Errorf("Detect(%s) = false", f)
		}
	}
	// Heads of other agents' files, in case their test folders are absent.
	for _, s := range foreignHeads {
		if New().Detect([]byte(s)) {
			t.Errorf("Detect claims %.80s", s)
		}
	}
	// A head cut in the middle of a long first line is still recognised.
	data, err := os.ReadFile(corpusDir + "/pimono_large-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !New().Detect(data[:160]) {
		t.Error("Detect misses a cut first line")
	}
}

var foreignHeads = []string{
	`{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"0a1b","version":"2.0.14","type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2025-10-01T00:00:00Z"}`,
	`{"timestamp":"2025-09-24T19:22:20.000Z","type":"session_meta","payload":{"id":"01997e76","cwd":"/w","cli_version":"0.40.0"}}`,
	`{"type":"thread.started","thread_id":"0199"}` + "\n" + `{"type":"error","message":"boom"}`,
	`{"type":"step_start","timestamp":1767036059338,"sessionID":"ses_4947","part":{"id":"prt_b6b8","type":"step-start"}}`,
	`{"type":"tool_use","timestamp":1,"sessionID":"ses_4947","part":{"type":"tool","tool":"bash","callID":"c","state":{"status":"completed"}}}`,
	`{"timestamp":1772641510628,"threadId":"1478","projectDirectory":"/p","event":{"type":"message.updated","properties":{"info":{"role":"user"}}}}`,
	"{\n  \"info\": {\n    \"id\": \"ses_f96a\",\n    \"version\": \"1.18.27\"\n  },\n  \"messages\": []\n}",
	`{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u2","parentUuid":"u1","sessionId":"0a1b"}`,
	"{\n  \"info\": {\"exit_status\": \"Submitted\", \"submission\": \"\", \"mini_version\": \"1.0\"},\n  \"messages\": [{\"role\": \"system\", \"content\": \"x\"}],\n  \"trajectory_format\": \"mini-swe-agent-1\"\n}",
	`[{"id":0,"source":"user","action":"message"}]`,
}

func readHead(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, _ := f.ReadAt(buf, 0)
	return buf[:n]
}

// TestWritePrefix checks that the prefix through step n decodes to exactly
// n steps whose actions equal the original's, and that a run-event prefix
// is a byte prefix of the original.
func TestWritePrefix(t *testing.T) {
	for _, path := range inputs(t) {
		if _, ok := refusedFiles[filepath.Base(path)]; ok {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, data, err := decodeFile(t, path)
			if err != nil {
				t.Fatal(err)
			}
			steps := tr.Steps()
			for _, n := range sampleSteps(tr) {
				var out bytes.Buffer
				err := New().WritePrefix(&out, bytes.NewReader(data), int64(len(data)), tr, n)
				if berr := trajectory.CheckBoundary(tr, n); berr != nil {
					if err == nil {
						t.Errorf("step %d: WritePrefix accepted a boundary CheckBoundary refuses (%v)", n, berr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: %v", n, err)
				}
				if !bytes.HasPrefix(data, out.Bytes()) {
					t.Fatalf("step %d: prefix is not a byte prefix of the original", n)
				}
				pt, err := New().Decode(bytes.NewReader(out.Bytes()), trajectory.Options{})
				if err != nil {
					t.Fatalf("step %d: prefix does not decode: %v\n%s", n, err, out.Bytes())
				}
				if len(pt.Steps()) != n {
					t.Fatalf("step %d: prefix has %d steps", n, len(pt.Steps()))
				}
				k := tr.ActionIndex(n)
				// DeepEqual first: cmp.Diff over hundreds of actions is slow,
				// and only a mismatch needs its report.
				if !reflect.DeepEqual(tr.Actions[:k+1], pt.Actions) {
					t.Fatalf("step %d: prefix actions differ (-orig +prefix):\n%s", n, cmp.Diff(tr.Actions[:k+1], pt.Actions))
				}
				if got := New().PrefixModelTurns(tr, n); got != k+1 {
					t.Errorf("PrefixModelTurns(%d) = %d, want %d", n, got, k+1)
				}
				if pt.SessionID != tr.SessionID || pt.Version != tr.Version {
					t.Errorf("step %d: prefix session %q version %q", n, pt.SessionID, pt.Version)
				}
			}
			for _, bad := range []int{0, len(steps) + 1} {
				if err := New().WritePrefix(&bytes.Buffer{}, bytes.NewReader(data), int64(len(data)), tr, bad); err == nil {
					t.Errorf("WritePrefix(%d) succeeded", bad)
				}
			}
		})
	}
}

// sampleSteps is every step of a small file; of a large one the first,
// second, middle and last steps, the parallel batches and the steps around
// an incomplete batch, which keeps the race-enabled run short.
func sampleSteps(tr *trajectory.Trajectory) []int {
	steps := tr.Steps()
	if len(steps) <= 20 {
		var all []int
		for n := 1; n <= len(steps); n++ {
			all = append(all, n)
		}
		return all
	}
	pick := map[int]bool{1: true, 2: true, len(steps) / 2: true, len(steps): true}
	last := 0
	for _, a := range tr.Actions {
		if a.Step > 0 {
			last = a.Step
			if len(a.Calls) > 1 {
				pick[a.Step] = true
			}
		} else if len(a.Calls) > 0 && last > 0 {
			pick[last], pick[min(last+1, len(steps))] = true, true
		}
	}
	var out []int
	for n := 1; n <= len(steps); n++ {
		if pick[n] {
			out = append(out, n)
		}
	}
	return out
}

// TestHandChecked pins facts checked by hand (jq and an independent Python
// pairing of toolCall ids to toolResults), so a wrong golden cannot be
// accepted by -update unnoticed.
func TestHandChecked(t *testing.T) {
	type call struct{ ID, Name string }
	tests := []struct {
		file                                 string
		actions, steps, incomplete, parallel int
		first                                [][]call // the first steps' calls
		last                                 []call   // the last step's calls
	}{
		{corpusDir + "/pimono_large-session.jsonl", 453, 366, 0, 3,
			[][]call{
				{{"toolu_017qEkVzzPb7b7o4FkgJLF23", "read"}, {"toolu_01FnVNKzWWm2s2SFJmJttiWh", "read"}, {"toolu_016aKHTkjrTJcMds3wsEou2R", "bash"}},
				{{"toolu_01G6wBLUY7g5eyk4TJEcTUiT", "read"}, {"toolu_012U6SQ4AGg5JrNK6s715ATw", "read"}, {"toolu_01TSY14a4g85DGSpjo9ao8Eu", "read"}, {"toolu_01Fo2ghr79kbj5bRxyVyFoQQ", "read"}},
				{{"toolu_01WuL7wXYE2pFBxf9HwRvBYq", "edit"}},
			},
			[]call{{"toolu_013fQFFUrLR3wJ8t65h8Rso1", "bash"}}},
		// Two batches never got results: line 628 (a compaction follows it)
		// and line 824 (the fixture was truncated there).
		{corpusDir + "/pimono_before-compaction.jsonl", 397, 358, 2, 8,
			[][]call{
				{{"toolu_012yuiPP1VAfh196GXaAmT8D", "read"}, {"toolu_018AGG1WjGWVfUR2Sibzkh2Q", "read"}},
				{{"toolu_01KgRZiUs86jzrwZs41sAvEs", "read"}},
				{{"toolu_01GDop9s8DBp8sZnT9Wpy9Cy", "bash"}},
			},
			[]call{{"toolu_01LWCauu7ASRfYLxEMobbEyg", "bash"}}},
		// One read batch, then three text-only turns (one empty, from an
		// aborted request); agent_end and auto_* events add nothing.
		{corpusDir + "/takopi_pi_print_mode_events.jsonl", 4, 1, 0, 0,
			[][]call{{{"toolu_01HXYZREAD", "read"}}}, []call{{"toolu_01HXYZREAD", "read"}}},
		// tool_2 (write) has results but no assistant message: the fixture
		// was trimmed, so it is not an action.
		{corpusDir + "/takopi_pi_stream_success.jsonl", 2, 1, 0, 0,
			[][]call{{{"tool_1", "bash"}}}, []call{{"tool_1", "bash"}}},
		{corpusDir + "/agentsessions_pi_small.jsonl", 2, 0, 0, 0, nil, nil},
		{corpusDir + "/agenthistory_real_sessions_pi_session-01.jsonl", 1, 0, 0, 0, nil, nil},
		// Lines 6-8 are an abandoned branch; line 19 is an aborted response
		// whose call never ran.
		{"testdata/tree_v3_branches.jsonl", 5, 3, 0, 2,
			[][]call{{{"call_r1", "read"}}, {{"call_e1", "edit"}, {"call_b1", "bash"}}, {{"call_w1", "write"}, {"call_s1", "satellite_remote_exec"}}},
			[]call{{"call_w1", "write"}, {"call_s1", "satellite_remote_exec"}}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			tr, _, err := decodeFile(t, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			var steps [][]call
			incomplete, parallel := 0, 0
			for _, a := range tr.Actions {
				if len(a.Calls) > 0 && a.Step == 0 {
					incomplete++
				}
				if a.Step == 0 {
					continue
				}
				if len(a.Calls) > 1 {
					parallel++
				}
				var s []call
				for _, c := range a.Calls {
					s = append(s, call{c.ID, c.Name})
				}
				steps = append(steps, s)
			}
			got := []int{len(tr.Actions), len(steps), incomplete, parallel}
			if want := []int{tt.actions, tt.steps, tt.incomplete, tt.parallel}; !slices.Equal(got, want) {
				t.Errorf("actions, steps, incomplete, parallel = %v, want %v", got, want)
			}
			if len(steps) > 0 {
				if d := cmp.Diff(tt.first, steps[:len(tt.first)]); d != "" {
					t.Errorf("first steps (-want +got):\n%s", d)
				}
				if d := cmp.Diff(tt.last, steps[len(steps)-1]); d != "" {
					t.Errorf("last step (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestHeaderAndContent(t *testing.T) {
	tr, _, err := decodeFile(t, "testdata/mode_json_parallel.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != SubFormatEvents || tr.SessionID != "019f0000-0000-7000-8000-000000000002" || tr.Version != "" {
		t.Errorf("format %q session %q version %q", tr.Format, tr.SessionID, tr.Version)
	}
	a := tr.Actions[0]
	if a.Text != "Reading it back and checking git status in parallel." {
		t.Errorf("text %q", a.Text)
	}
	if got := a.Calls[1].Observation.Content; got != "A  README.md\nA  main.py\n?? hello.txt\n" {
		t.Errorf("bash result %q", got)
	}
	// The step spans message_start … turn_end, and its results the
	// tool_execution_end and toolResult message_end lines.
	if a.Locator.First != 6 || a.Locator.Last != 18 || a.Calls[0].Observation.Locator.First != 11 || a.Calls[0].Observation.Locator.Last != 18 {
		t.Errorf("locators %s / %s", a.Locator, a.Calls[0].Observation.Locator)
	}
	for file, want := range map[string]string{
		corpusDir + "/pimono_large-session.jsonl":                     SubFormatSessionV1,
		corpusDir + "/agentsessions_pi_small.jsonl":                   SubFormatSessionV3,
		corpusDir + "/takopi_pi_stream_success.jsonl":                 SubFormatEvents,
		corpusDir + "/agenthistory_real_sessions_pi_session-01.jsonl": SubFormatSessionV3,
	} {
		tr, _, err := decodeFile(t, file)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Format != want || tr.Version != "" {
			t.Errorf("%s: format %q version %q, want %q", file, tr.Format, tr.Version, want)
		}
	}
	lean, err := New().Decode(strings.NewReader(mustRead(t, "testdata/tree_v3_branches.jsonl")), trajectory.Options{SkipObservationContent: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := lean.Actions[0].Calls[0].Observation; c == nil || c.Content != "" {
		t.Errorf("lean decode kept content %+v", c)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReplayable(t *testing.T) {
	tests := []struct {
		name, args string
		ok         bool
		why        string
	}{
		{"read", `{"path":"a.go","offset":10,"limit":5}`, true, ""},
		{"read", `{"offset":10}`, false, `"path"`},
		{"bash", `{"command":"ls","timeout":30}`, true, ""},
		{"bash", `{"command":""}`, false, `"command"`},
		{"edit", `{"path":"a","oldText":"x","newText":""}`, true, ""},
		{"edit", `{"path":"a","oldText":"x"}`, false, "newText"},
		{"write", `{"path":"a","content":""}`, true, ""},
		{"write", `{"path":"a"}`, false, `"content"`},
		{"grep", `{"pattern":"x","glob":"*.go"}`, true, ""},
		{"find", `{"pattern":"*.go"}`, true, ""},
		{"ls", `{}`, true, ""},
		{"ls", `[]`, false, "not a JSON object"},
		{"satellite_remote_exec", `{"tool":"bash"}`, false, "not one of pi's built-in tools"},
		{"subagent", `{}`, false, "extension and custom tools"},
	}
	for _, tt := range tests {
		err := New().CheckReplayable(&trajectory.ToolCall{Name: tt.name, Arguments: []byte(tt.args)})
		if (err == nil) != tt.ok || err != nil && !strings.Contains(err.Error(), tt.why) {
			t.Errorf("CheckReplayable(%s %s) = %v, want ok=%v containing %q", tt.name, tt.args, err, tt.ok, tt.why)
		}
	}
	if got := New().ReplayTools(); !slices.Equal(got, []string{"read", "bash", "edit", "write", "grep", "find", "ls"}) {
		t.Errorf("ReplayTools = %v", got)
	}
}
