package sweagent

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const corpusDir = "../../testdata/trajectories/swe-agent"

var corpus = formattest.Corpus{
	Format: New(),
	Globs:  []string{corpusDir + "/*.traj"},
	Bad:    badInputs,
}

func TestCorpusGolden(t *testing.T) { corpus.TestGolden(t) }

func decodeFile(t *testing.T, name string) *trajectory.Trajectory {
	t.Helper()
	_, tr := formattest.DecodeFile(t, New(), filepath.Join(corpusDir, name))
	return tr
}

func TestContent(t *testing.T) {
	// Function calling (1.0): id and name from history's tool call; the
	// final submit has no history message and keeps its position's id.
	tr := decodeFile(t, "6e44b9__sweagenttestrepo-1c2844.traj")
	if len(tr.Actions) != 5 || len(tr.Steps()) != 5 {
		t.Fatalf("%d actions, %d steps", len(tr.Actions), len(tr.Steps()))
	}
	c := tr.Actions[3].Calls[0]
	if c.ID != "call_dcF76aXH6e1pzqRwGxOwpuxb" || c.Name != "bash" ||
		string(c.Arguments) != `{"action":"python3 /SWE-agent__test-repo/tests/missing_colon.py"}` {
		t.Errorf("step 4 call = %s %s %s", c.ID, c.Name, c.Arguments)
	}
	if last := tr.Actions[4].Calls[0]; last.ID != "step-5" || last.Name != "submit" {
		t.Errorf("submit call = %s %s", last.ID, last.Name)
	}
	if o := tr.Actions[0].Calls[0].Observation.Content; o != "Found 1 matches for \"missing_colon.py\" in /SWE-agent__test-repo:\r\n/SWE-agent__test-repo/tests/missing_colon.py" {
		t.Errorf("observation = %q", o)
	}
	if !strings.HasPrefix(tr.Actions[0].Text, "To start addressing this issue") {
		t.Errorf("text = %.60q", tr.Actions[0].Text)
	}

	// Thought/action (0.x): the name is the command word, the demo user
	// message is not an assistant message.
	tr = decodeFile(t, "swe-agent__test-repo-i1.traj")
	c = tr.Actions[2].Calls[0]
	if c.ID != "step-3" || c.Name != "edit" || !strings.HasPrefix(string(c.Arguments), `{"action":"edit 4:4\n`) {
		t.Errorf("edit call = %s %s %s", c.ID, c.Name, c.Arguments)
	}
}

// A history message beyond the trajectory is a response whose action never
// ran: an incomplete step, so the boundary cannot reach past it.
func TestUnansweredResponse(t *testing.T) {
	src := doc(entry1, asst1+",\n"+tool1+",\n"+`{"role":"assistant","content":"again","tool_calls":[{"id":"c2","function":{"name":"bash"}}]}`)
	tr, err := New().Decode(strings.NewReader(src), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Actions) != 2 || len(tr.Steps()) != 1 || tr.Actions[1].Complete() || tr.Actions[1].Calls[0].ID != "c2" {
		t.Fatalf("actions = %+v", tr.Actions)
	}
}

func TestWritePrefix(t *testing.T) {
	corpus.ForEach(t, func(t *testing.T, _ string, data []byte, tr *trajectory.Trajectory) {
		formattest.CheckPrefixes(t, New(), data, tr, formattest.AllSteps(tr), formattest.Verbatim(data, tr, false))
	})
}

// The prefix is the original bytes minus the later entries and messages:
// it is still the JSON SWE-agent wrote, with info and replay_config intact.
func TestWritePrefixBytes(t *testing.T) {
	data, tr := formattest.DecodeFile(t, New(), filepath.Join(corpusDir, "6e44b9__sweagenttestrepo-1c2844.traj"))
	var buf bytes.Buffer
	if err := New().WritePrefix(&buf, bytes.NewReader(data), int64(len(data)), tr, 2); err != nil {
		t.Fatal(err)
	}
	var orig, got map[string]any
	if err := json.Unmarshal(data, &orig); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("prefix is not JSON: %v", err)
	}
	want := map[string]any{}
	for k, v := range orig {
		want[k] = v
	}
	want["trajectory"] = orig["trajectory"].([]any)[:2]
	// system, instance, then two (assistant, tool) pairs.
	want["history"] = orig["history"].([]any)[:6]
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if !bytes.HasPrefix(buf.Bytes(), data[:bytes.Index(data, []byte(`"trajectory"`))]) {
		t.Error("the bytes before the trajectory changed")
	}
}

func TestDetect(t *testing.T) { formattest.CheckDetect(t, New(), filepath.Dir(corpusDir)) }

func TestCheckReplayable(t *testing.T) {
	tests := []struct {
		name, args string
		want       string // "" = replayable
	}{
		{"bash", `{"action":"ls -la"}`, ""},
		{"edit", `{"action":"edit 4:4\nx\nend_of_edit"}`, ""},
		{"submit", `{"action":"submit"}`, "submit ends the episode"},
		{"submit", `{"action":"submit\n"}`, "submit ends the episode"},
		{"exit_cost", `{"action":"exit_cost"}`, "exit_cost is SWE-agent ending the episode"},
		{"bash", `{"command":"ls"}`, `no "action" string`},
	}
	for _, tt := range tests {
		formattest.CheckReplayable(t, New(), tt.name, tt.args, tt.want)
	}
	tr := decodeFile(t, "humanevalfix-python-0.traj")
	stale := trajectory.CheckPrefixTools(New(), tr, len(tr.Steps()))
	if len(stale) != 1 || stale[0].Step != 5 {
		t.Errorf("stale = %v", stale)
	}
}

func TestRefuseRun(t *testing.T) {
	rr, ok := New().(trajectory.RunRefuser)
	if !ok {
		t.Fatal("the SWE-agent format does not refuse runs")
	}
	for _, cont := range []bool{false, true} {
		err := rr.RefuseRun(nil, cont)
		if err == nil || !strings.Contains(err.Error(), "1.x is not published on PyPI") || !strings.Contains(err.Error(), "--prepare-only") {
			t.Errorf("RefuseRun(%v) = %v", cont, err)
		}
	}
}
