package copilot

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const corpusDir = "../../testdata/trajectories/copilot"

var corpus = formattest.Corpus{
	Format:  New(),
	Globs:   []string{corpusDir + "/*.jsonl"},
	Columns: []formattest.Column{formattest.Reasoning, formattest.Bytes, formattest.Torn},
	Bad:     badInputs,
	Unit:    "line",
}

func TestGolden(t *testing.T)    { corpus.TestGolden(t) }
func TestBadInputs(t *testing.T) { corpus.TestBadInputs(t) }
func FuzzDecode(f *testing.F)    { corpus.Fuzz(f, 64<<10, nil) }

func TestDetect(t *testing.T) {
	corpus.TestDetect(t, filepath.Dir(corpusDir))
	// A head cut in the middle of the first line is still recognised.
	if !New().Detect(formattest.Head(t, corpusDir+"/generated_copilot-1.0.102_greeter.jsonl")[:160]) {
		t.Error("Detect misses a cut first line")
	}
}

// TestWritePrefix: the prefix through step n is a byte prefix of the file
// that decodes to the same n steps.
func TestWritePrefix(t *testing.T) {
	corpus.ForEach(t, func(t *testing.T, _ string, data []byte, tr *trajectory.Trajectory) {
		formattest.CheckPrefixes(t, New(), data, tr, formattest.AllSteps(tr), formattest.Verbatim(data, tr, true))
	})
}

func TestContent(t *testing.T) {
	_, tr := formattest.DecodeFile(t, New(), corpusDir+"/generated_copilot-1.0.102_greeter.jsonl")
	if tr.Version != "1.0.102" || tr.Cwd != "/tmp/pvisor-e2e/copilot/repo" || tr.SessionID == "" {
		t.Errorf("version %q cwd %q session %q", tr.Version, tr.Cwd, tr.SessionID)
	}
	s := tr.Steps()
	if len(s) != 5 {
		t.Fatalf("%d steps, want 5", len(s))
	}
	if c := s[0].Calls[1]; c.Name != ToolBash || !strings.HasSuffix(c.Observation.Content, "<shellId: 0 completed with exit code 0>") {
		t.Errorf("step 1 bash = %s %q", c.Name, c.Observation.Content)
	}
	if c := s[1].Calls[0]; c.Name != ToolView || c.Observation.Content != "# Greeter\n\nA tiny greeter. It prints a greting.\n" {
		t.Errorf("step 2 view = %s %q", c.Name, c.Observation.Content)
	}
}

func TestCheckReplayable(t *testing.T) {
	f := New()
	formattest.CheckReplayable(t, f, "bash", `{"command":"ls"}`, "")
	formattest.CheckReplayable(t, f, "bash", `{"command":"ls","mode":"async"}`, "runs on after the call returns")
	formattest.CheckReplayable(t, f, "view", `{"path":"/a"}`, "")
	formattest.CheckReplayable(t, f, "create", `{"path":"/a"}`, `no "file_text" string`)
	formattest.CheckReplayable(t, f, "edit", `{"path":"/a","old_str":"x","new_str":"y"}`, "")
	formattest.CheckReplayable(t, f, "grep", `{"pattern":"x"}`, "")
	formattest.CheckReplayable(t, f, "glob", `{"pattern":"*"}`, "")
	formattest.CheckReplayable(t, f, "task", `{}`, "is not re-executed")
	formattest.CheckReplayable(t, f, "bash", `[]`, "not a JSON object")
}
