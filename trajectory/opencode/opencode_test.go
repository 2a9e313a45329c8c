package opencode

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

const corpusDir = "../../testdata/trajectories/opencode"

// refusal is the error a file must be refused with.
type refusal struct {
	kind trajectory.Kind
	line int
	msg  string
}

// refusedFiles are the corpus files this format must refuse, and why: the kimaki
// files are captures of the server's /event bus, not a session; the ortus
// file is three `opencode run` outputs concatenated (its three sessions are
// decoded separately from testdata/ortus_run_session*.jsonl).
var refusedFiles = map[string]refusal{
	"kimaki_real-session-action-buttons.jsonl":             {trajectory.Unsupported, 1, "capture of the OpenCode server's /event bus (session.created)"},
	"kimaki_real-session-permission-external-file.jsonl":   {trajectory.Unsupported, 1, "capture of the OpenCode server's /event bus (session.created)"},
	"kimaki_real-session-task-normal.jsonl":                {trajectory.Unsupported, 1, "capture of the OpenCode server's /event bus (message.updated)"},
	"kimaki_real-session-task-three-parallel-sleeps.jsonl": {trajectory.Unsupported, 1, "capture of the OpenCode server's /event bus (session.status)"},
	"ortus_opencode-run-events.jsonl":                      {trajectory.Malformed, 4, "the file holds several runs"},
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
	if len(out) < 10 {
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

// TestHandChecked pins facts checked by hand against the files with jq, so a
// wrong golden cannot be accepted by -update unnoticed.
func TestHandChecked(t *testing.T) {
	type callWant struct{ id, name string }
	tests := []struct {
		file  string
		steps [][]callWant // tool calls of each step, in order
		texts int          // text-only actions
	}{
		// jq -c '[.type,.part.tool,.part.callID]' ortus_run_session2.jsonl:
		// step 1 = bash+glob (same messageID), step 2 = read, then a text step.
		{"testdata/ortus_run_session2.jsonl", [][]callWant{
			{{"na73sW5AlRphkalOgDKEG0Lq21F3ABky", "bash"}, {"GGahoyTaevEarcOZbP3YMDIAf99ZBypD", "glob"}},
			{{"jEgrvVzG4Yl7A9lcTvyW1NdpaaIFkqfV", "read"}},
		}, 1},
		{"testdata/export_ortus_session2.json", [][]callWant{
			{{"na73sW5AlRphkalOgDKEG0Lq21F3ABky", "bash"}, {"GGahoyTaevEarcOZbP3YMDIAf99ZBypD", "glob"}},
			{{"jEgrvVzG4Yl7A9lcTvyW1NdpaaIFkqfV", "read"}},
		}, 1},
		// takopi_opencode_stream_success: one bash step (reason tool-calls), one text step.
		{corpusDir + "/takopi_opencode_stream_success.jsonl", [][]callWant{{{"r9bQWsNLvOrJGIOz", "bash"}}}, 1},
		// takopi_opencode_run_json: one step with bash and text (reason stop), then an error event.
		{corpusDir + "/takopi_opencode_run_json.jsonl", [][]callWant{{{"01J3Z2K7S0XQ9Y8W7V6U5T4R3S", "bash"}}}, 0},
		{"testdata/ortus_run_session3.jsonl", [][]callWant{
			{{"yPnRPzyD7J2pEpk3Owvl8qVswplVUaiw", "codegraph_codegraph_explore"}},
			{{"OPz3PcARICqtiJlj3vVHHcMgqWX4ttzA", "codegraph_codegraph_explore"}},
		}, 1},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			tr, _, err := decodeFile(t, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]callWant
			texts := 0
			for _, a := range tr.Actions {
				if len(a.Calls) == 0 {
					texts++
				}
				if a.Step == 0 {
					continue
				}
				var s []callWant
				for _, c := range a.Calls {
					s = append(s, callWant{c.ID, c.Name})
				}
				got = append(got, s)
			}
			if d := cmp.Diff(tt.steps, got, cmp.AllowUnexported(callWant{})); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
			if texts != tt.texts {
				t.Errorf("text-only actions = %d, want %d", texts, tt.texts)
			}
		})
	}
}

// The same session as run events and as an export decodes to the same
// actions, apart from where they sit in the file.
func TestExportMatchesRunEvents(t *testing.T) {
	run, _, err := decodeFile(t, "testdata/ortus_run_session2.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	exp, _, err := decodeFile(t, "testdata/export_ortus_session2.json")
	if err != nil {
		t.Fatal(err)
	}
	if exp.SessionID != run.SessionID || exp.Version != "1.18.27" || run.Version != "" {
		t.Errorf("session %q/%q version %q/%q", exp.SessionID, run.SessionID, exp.Version, run.Version)
	}
	ignoreLoc := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Locator" }, cmp.Ignore())
	if d := cmp.Diff(run.Actions, exp.Actions, ignoreLoc); d != "" {
		t.Errorf("actions differ (-run +export):\n%s", d)
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
			if got, want := New().Detect(head), d.Name() == trajectory.OpenCode; got != want {
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
	data, err := os.ReadFile("testdata/ortus_run_session2.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !New().Detect(data[:300]) {
		t.Error("Detect misses a cut first line")
	}
}

var foreignHeads = []string{
	`{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"0a1b","version":"2.0.14","type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2025-10-01T00:00:00Z"}`,
	`{"timestamp":"2025-09-24T19:22:20.000Z","type":"session_meta","payload":{"id":"01997e76","cwd":"/w","cli_version":"0.40.0"}}`,
	`{"type":"thread.started","thread_id":"0199"}` + "\n" + `{"type":"error","message":"boom"}`,
	`{"type":"session","version":3,"id":"019e963d-6bd6","timestamp":"2026-06-05T05:24:28.246Z","cwd":"/tmp"}`,
	`{"type":"agent_start"}` + "\n" + `{"type":"turn_start"}`,
	`{"type":"message_end","message":{"role":"assistant","content":[]}}`,
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
			for n := 1; n <= len(steps); n++ {
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
				if tr.Format == SubFormatRunEvents && !bytes.HasPrefix(data, out.Bytes()) {
					t.Fatalf("step %d: prefix is not a byte prefix of the original", n)
				}
				if got, want := PrefixExtFor(tr), map[bool]string{true: "json", false: "jsonl"}[tr.Format == SubFormatExport]; got != want {
					t.Errorf("PrefixExtFor = %s", got)
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

// An export prefix is cut inside the boundary message when the message has
// further steps, keeps the message info, and ends at the step's last part.
func TestExportPrefixCut(t *testing.T) {
	tr, data, err := decodeFile(t, "testdata/export_edge_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := New().WritePrefix(&out, bytes.NewReader(data), int64(len(data)), tr, 1); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{`"prt_002e"`, `"finish":"tool-calls"`, `"id":"ses_edgecases0001"`} {
		if !strings.Contains(s, want) {
			t.Errorf("prefix lacks %s:\n%s", want, s)
		}
	}
	for _, gone := range []string{`"prt_002f"`, `"msg_003"`} {
		if strings.Contains(s, gone) {
			t.Errorf("prefix keeps %s:\n%s", gone, s)
		}
	}
	// A wrong source is noticed rather than cut blindly.
	other, err := os.ReadFile("testdata/export_ortus_session2.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := New().WritePrefix(&bytes.Buffer{}, bytes.NewReader(other), int64(len(other)), tr, 1); err == nil {
		t.Error("WritePrefix cut a prefix from a different file")
	}
}

func TestReplayable(t *testing.T) {
	tests := []struct {
		name, args string
		ok         bool
		why        string
	}{
		{"bash", `{"command":"ls","description":"list"}`, true, ""},
		{"bash", `{"description":"list"}`, false, `"command"`},
		{"read", `{"filePath":"/a"}`, true, ""},
		{"write", `{"filePath":"/a","content":""}`, true, ""},
		{"edit", `{"filePath":"/a","oldString":"x","newString":""}`, true, ""},
		{"edit", `{"filePath":"/a","oldString":"x"}`, false, `"newString"`},
		{"multiedit", `{"filePath":"/a","edits":[{"oldString":"a","newString":"b"}]}`, true, ""},
		{"multiedit", `{"filePath":"/a","edits":[]}`, false, "edits"},
		{"glob", `{"pattern":"*.go"}`, true, ""},
		{"grep", `{"pattern":"x","include":"*.go"}`, true, ""},
		{"list", `{}`, true, ""},
		{"apply_patch", `{"patchText":"*** Begin Patch\n*** End Patch"}`, true, ""},
		{"patch", `{}`, false, "patchText"},
		{"todowrite", `{"todos":[]}`, true, ""},
		{"todoread", `{}`, true, ""},
		{"bash", `"ls"`, false, "not a JSON object"},
		{"task", `{"prompt":"p"}`, false, "subagent"},
		{"webfetch", `{"url":"https://x"}`, false, "network"},
		{"websearch", `{"query":"x"}`, false, "network"},
		{"codegraph_codegraph_explore", `{"query":"x"}`, false, "MCP"},
		{"frobnicate", `{}`, false, "not a built-in OpenCode tool"},
	}
	for _, tt := range tests {
		err := New().CheckReplayable(&trajectory.ToolCall{Name: tt.name, Arguments: []byte(tt.args)})
		if (err == nil) != tt.ok || err != nil && !strings.Contains(err.Error(), tt.why) {
			t.Errorf("CheckReplayable(%s %s) = %v, want ok=%v containing %q", tt.name, tt.args, err, tt.ok, tt.why)
		}
	}
	tools := New().ReplayTools()
	for _, want := range []string{"bash", "read", "write", "edit", "glob", "grep", "list", "patch", "apply_patch", "multiedit", "todowrite", "todoread"} {
		if !slices.Contains(tools, want) {
			t.Errorf("ReplayTools lacks %s", want)
		}
	}
}
