package miniswe

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const corpusDir = "../../testdata/trajectories/mini-swe-agent"

var corpus = formattest.Corpus{
	Format:  New(),
	Globs:   []string{corpusDir + "/*.traj.json"},
	Columns: []formattest.Column{formattest.Reasoning},
	Bad:     badInputs,
}

func TestCorpusGolden(t *testing.T) { corpus.TestGolden(t) }

func decodeFile(t *testing.T, name string) *trajectory.Trajectory {
	t.Helper()
	_, tr := formattest.DecodeFile(t, New(), filepath.Join(corpusDir, name))
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
	corpus.ForEach(t, func(t *testing.T, _ string, data []byte, tr *trajectory.Trajectory) {
		steps := tr.Steps()
		formattest.CheckPrefixRoundTrip(t, New(), data, tr, func(t testing.TB, n int, _ []byte, pt *trajectory.Trajectory) {
			if last := steps[n-1].Locator.Last; pt.Lines != last+1 {
				t.Errorf("step %d: prefix has %d messages, want %d", n, pt.Lines, last+1)
			}
			if pt.Format != tr.Format || pt.Version != tr.Version || pt.SessionID != tr.SessionID {
				t.Errorf("step %d: prefix lost info: %s %s %s", n, pt.Format, pt.Version, pt.SessionID)
			}
		})
	})
}

// The prefix is the original bytes minus the later messages.
func TestWritePrefixBytes(t *testing.T) {
	data, tr := formattest.DecodeFile(t, New(), filepath.Join(corpusDir, "generated_mini-2.4.6_textbased.traj.json"))
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

func TestDetect(t *testing.T) { formattest.CheckDetect(t, New(), filepath.Dir(corpusDir)) }

func TestCheckReplayable(t *testing.T) {
	tests := []struct {
		name, args string
		want       string // "" = replayable
	}{
		{"bash", `{"command":"ls -la"}`, ""},
		{"bash", `{"command": "cd /testbed && python -m pytest"}`, ""},
		{"bash", `{"command":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"}`,
			"submission command ends the episode"},
		{"bash", `{"command":"echo MINI_SWE_AGENT_FINAL_OUTPUT"}`, "submission command ends the episode"},
		{"bash", `{"cmd":"ls"}`, `no "command" string`},
		{"bash", `"ls"`, `no "command" string`},
		{"python", `{"code":"1"}`, `only the "bash" tool`},
	}
	for _, tt := range tests {
		formattest.CheckReplayable(t, New(), tt.name, tt.args, tt.want)
	}
	// A v1 submission is a complete step (its "observation" is the
	// submission message), so the prefix check must catch it.
	tr := decodeFile(t, "miniswe_testdata_local.traj.json")
	stale := trajectory.CheckPrefixTools(New(), tr, len(tr.Steps()))
	if len(stale) != 1 || stale[0].Step != 2 || !stale[0].EndsEpisode || !strings.Contains(stale[0].Error(), "submission command ends the episode") {
		t.Errorf("stale = %v", stale)
	}
}
