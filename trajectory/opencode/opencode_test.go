package opencode

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const corpusDir = "../../testdata/trajectories/opencode"

// corpus holds the corpus copies and the package's own run-event and
// export files. It refuses the kimaki files, captures of the server's
// /event bus rather than a session, and the ortus file, three `opencode
// run` outputs concatenated (testdata/ortus_run_session*.jsonl hold its
// three sessions one by one).
var corpus = formattest.Corpus{
	Format: New(),
	Globs:  []string{corpusDir + "/*.json*", "testdata/*.json*"},
	Refused: map[string]formattest.Refusal{
		"kimaki_real-session-action-buttons.jsonl":             formattest.Unsupported(1, "capture of the OpenCode server's /event bus (session.created)"),
		"kimaki_real-session-permission-external-file.jsonl":   formattest.Unsupported(1, "capture of the OpenCode server's /event bus (session.created)"),
		"kimaki_real-session-task-normal.jsonl":                formattest.Unsupported(1, "capture of the OpenCode server's /event bus (message.updated)"),
		"kimaki_real-session-task-three-parallel-sleeps.jsonl": formattest.Unsupported(1, "capture of the OpenCode server's /event bus (session.status)"),
		"ortus_opencode-run-events.jsonl":                      formattest.Malformed(4, "the file holds several runs"),
	},
	Columns: []formattest.Column{formattest.Reasoning, formattest.Bytes, formattest.Torn, formattest.Sizes},
	Bad:     badInputs,
}

func TestGolden(t *testing.T) { corpus.TestGolden(t) }

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
			_, tr := formattest.DecodeFile(t, New(), tt.file)
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
	_, run := formattest.DecodeFile(t, New(), "testdata/ortus_run_session2.jsonl")
	_, exp := formattest.DecodeFile(t, New(), "testdata/export_ortus_session2.json")
	if exp.SessionID != run.SessionID || exp.Version != "1.18.27" || run.Version != "" {
		t.Errorf("session %q/%q version %q/%q", exp.SessionID, run.SessionID, exp.Version, run.Version)
	}
	ignoreLoc := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Locator" }, cmp.Ignore())
	if d := cmp.Diff(run.Actions, exp.Actions, ignoreLoc); d != "" {
		t.Errorf("actions differ (-run +export):\n%s", d)
	}
}

func TestDetect(t *testing.T) {
	corpus.TestDetect(t, filepath.Dir(corpusDir))
	// A head cut in the middle of a long first line is still recognised.
	if !New().Detect(formattest.Head(t, "testdata/ortus_run_session2.jsonl")[:300]) {
		t.Error("Detect misses a cut first line")
	}
}

// TestWritePrefix checks that the prefix through step n decodes to exactly
// n steps whose actions equal the original's, and that a run-event prefix
// is a byte prefix of the original.
func TestWritePrefix(t *testing.T) {
	corpus.ForEach(t, func(t *testing.T, _ string, data []byte, tr *trajectory.Trajectory) {
		if got, want := PrefixExtFor(tr), map[bool]string{true: "json", false: "jsonl"}[tr.Format == SubFormatExport]; got != want {
			t.Errorf("PrefixExtFor = %s", got)
		}
		formattest.CheckPrefixes(t, New(), data, tr, formattest.AllSteps(tr), formattest.Verbatim(data, tr, tr.Format == SubFormatRunEvents))
	})
}

// An export prefix is cut inside the boundary message when the message has
// further steps, keeps the message info, and ends at the step's last part.
func TestExportPrefixCut(t *testing.T) {
	data, tr := formattest.DecodeFile(t, New(), "testdata/export_edge_cases.json")
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
		want       string // "" = replayable
	}{
		{"bash", `{"command":"ls","description":"list"}`, ""},
		{"bash", `{"description":"list"}`, `"command"`},
		{"read", `{"filePath":"/a"}`, ""},
		{"write", `{"filePath":"/a","content":""}`, ""},
		{"edit", `{"filePath":"/a","oldString":"x","newString":""}`, ""},
		{"edit", `{"filePath":"/a","oldString":"x"}`, `"newString"`},
		{"multiedit", `{"filePath":"/a","edits":[{"oldString":"a","newString":"b"}]}`, ""},
		{"multiedit", `{"filePath":"/a","edits":[]}`, "edits"},
		{"glob", `{"pattern":"*.go"}`, ""},
		{"grep", `{"pattern":"x","include":"*.go"}`, ""},
		{"list", `{}`, ""},
		{"apply_patch", `{"patchText":"*** Begin Patch\n*** End Patch"}`, ""},
		{"patch", `{}`, "patchText"},
		{"todowrite", `{"todos":[]}`, ""},
		{"todoread", `{}`, ""},
		{"bash", `"ls"`, "not a JSON object"},
		{"task", `{"prompt":"p"}`, "subagent"},
		{"webfetch", `{"url":"https://x"}`, "network"},
		{"websearch", `{"query":"x"}`, "network"},
		{"codegraph_codegraph_explore", `{"query":"x"}`, "MCP"},
		{"frobnicate", `{}`, "not a built-in OpenCode tool"},
	}
	for _, tt := range tests {
		formattest.CheckReplayable(t, New(), tt.name, tt.args, tt.want)
	}
	tools := New().ReplayTools()
	for _, want := range []string{"bash", "read", "write", "edit", "glob", "grep", "list", "patch", "apply_patch", "multiedit", "todowrite", "todoread"} {
		if !slices.Contains(tools, want) {
			t.Errorf("ReplayTools lacks %s", want)
		}
	}
}
