package pi

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const corpusDir = "../../testdata/trajectories/pi"

// corpus holds the corpus copies and the package's own session and event
// files; the earendilpi file, session entries cut without their header
// line, is refused.
var corpus = formattest.Corpus{
	Format: New(),
	Globs:  []string{corpusDir + "/*.json*", "testdata/*.json*"},
	Refused: map[string]formattest.Refusal{
		"earendilpi_personal-assistant_session-sample.jsonl": formattest.Malformed(1, "pi session file has no header"),
	},
	Columns: []formattest.Column{formattest.Reasoning, formattest.Bytes, formattest.Torn, formattest.Sizes},
	Bad:     badInputs,
	Unit:    "line",
}

func TestGolden(t *testing.T) { corpus.TestGolden(t) }

func TestDetect(t *testing.T) {
	corpus.TestDetect(t, filepath.Dir(corpusDir))
	// A head cut in the middle of a long first line is still recognised.
	if !New().Detect(formattest.Head(t, corpusDir+"/pimono_large-session.jsonl")[:160]) {
		t.Error("Detect misses a cut first line")
	}
}

// TestWritePrefix checks that the prefix through step n is a byte prefix
// of the original that decodes to exactly n steps whose actions equal the
// original's.
func TestWritePrefix(t *testing.T) {
	corpus.ForEach(t, func(t *testing.T, _ string, data []byte, tr *trajectory.Trajectory) {
		formattest.CheckPrefixes(t, New(), data, tr, sampleSteps(tr), formattest.Verbatim(data, tr, true))
	})
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
			_, tr := formattest.DecodeFile(t, New(), tt.file)
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
	_, tr := formattest.DecodeFile(t, New(), "testdata/mode_json_parallel.jsonl")
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
		_, tr := formattest.DecodeFile(t, New(), file)
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
		want       string // "" = replayable
	}{
		{"read", `{"path":"a.go","offset":10,"limit":5}`, ""},
		{"read", `{"offset":10}`, `"path"`},
		{"bash", `{"command":"ls","timeout":30}`, ""},
		{"bash", `{"command":""}`, `"command"`},
		{"edit", `{"path":"a","oldText":"x","newText":""}`, ""},
		{"edit", `{"path":"a","oldText":"x"}`, "newText"},
		{"write", `{"path":"a","content":""}`, ""},
		{"write", `{"path":"a"}`, `"content"`},
		{"grep", `{"pattern":"x","glob":"*.go"}`, ""},
		{"find", `{"pattern":"*.go"}`, ""},
		{"ls", `{}`, ""},
		{"ls", `[]`, "not a JSON object"},
		{"satellite_remote_exec", `{"tool":"bash"}`, "not one of pi's built-in tools"},
		{"subagent", `{}`, "extension and custom tools"},
	}
	for _, tt := range tests {
		formattest.CheckReplayable(t, New(), tt.name, tt.args, tt.want)
	}
	if got := New().ReplayTools(); !slices.Equal(got, []string{"read", "bash", "edit", "write", "grep", "find", "ls"}) {
		t.Errorf("ReplayTools = %v", got)
	}
}
