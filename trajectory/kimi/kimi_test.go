package kimi

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

const corpusDir = "../../testdata/trajectories/kimi"

// corpus is the wire log the e2e recording made (corpusDir) and its copy
// without the tool and request snapshots (testdata), small enough to seed
// the fuzzer.
var corpus = formattest.Corpus{
	Format:  New(),
	Globs:   []string{corpusDir + "/*.jsonl", "testdata/*.jsonl"},
	Columns: []formattest.Column{formattest.Reasoning, formattest.Bytes, formattest.Torn, formattest.Sizes},
	Bad:     badInputs,
	Unit:    "line",
}

func TestGolden(t *testing.T) { corpus.TestGolden(t) }

func TestDetect(t *testing.T) { corpus.TestDetect(t, filepath.Dir(corpusDir)) }

func TestBadInputs(t *testing.T) { corpus.TestBadInputs(t) }

// FuzzDecode checks that no input panics and that every successful decode
// keeps the model's invariants and cuts after each of its steps.
func FuzzDecode(f *testing.F) { corpus.Fuzz(f, 32<<10, nil) }

// TestWritePrefix checks that the prefix through every step is a byte
// prefix of the log that decodes to exactly that many steps.
func TestWritePrefix(t *testing.T) {
	corpus.ForEach(t, func(t *testing.T, _ string, data []byte, tr *trajectory.Trajectory) {
		var steps []int
		for n := 1; n <= len(tr.Steps()); n++ {
			steps = append(steps, n)
		}
		formattest.CheckPrefixes(t, New(), data, tr, steps, formattest.Verbatim(data, tr, true))
	})
}

// TestRecording pins what the recorded session holds: the cwd from the
// system prompt, the scripted batches, the observations Kimi's tools gave.
func TestRecording(t *testing.T) {
	data, err := os.ReadFile(corpusDir + "/kimi-2.1.0_greeter-wire.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Cwd != "/tmp/pvisor-e2e/kimi/repo" || tr.Format != "wire-jsonl-1.5" {
		t.Errorf("cwd %q format %q", tr.Cwd, tr.Format)
	}
	var got []string
	for _, a := range tr.Steps() {
		var names []string
		for _, c := range a.Calls {
			names = append(names, c.Name)
		}
		got = append(got, strings.Join(names, "+"))
	}
	if want := "Bash+Glob Read+Grep Write Edit Bash"; strings.Join(got, " ") != want {
		t.Errorf("steps %q, want %q", got, want)
	}
	s1, _ := tr.Step(1)
	if s1.Reasoning != "Start by seeing what is in the repository." || s1.Text != "Let me look around the project first." {
		t.Errorf("step 1 text %q reasoning %q", s1.Text, s1.Reasoning)
	}
	if o := s1.Calls[0].Observation; o == nil || o.Content != "Wall time: 0.030 seconds\n.git\nREADME.md\ngreeter\nmain.py\n" {
		t.Errorf("step 1 Bash observation %+v", o)
	}
	if c := s1.Calls[0].Cwd; c != tr.Cwd {
		t.Errorf("Bash call cwd %q", c)
	}
	if got := New().(interface{ NormalizeObservation(string) string }).NormalizeObservation(s1.Calls[0].Observation.Content); got != "Wall time: <masked> seconds\n.git\nREADME.md\ngreeter\nmain.py\n" {
		t.Errorf("normalized %q", got)
	}
	if n := New().PrefixModelTurns(tr, 5); n != 5 {
		t.Errorf("PrefixModelTurns(5) = %d", n)
	}
}

func TestCheckReplayable(t *testing.T) {
	formattest.CheckReplayable(t, New(), "Bash", `{"command":"ls"}`, "")
	formattest.CheckReplayable(t, New(), "Bash", `{"command":"sleep 9","run_in_background":true}`, "Bash with run_in_background is not reproduced")
	formattest.CheckReplayable(t, New(), "Grep", `{"pattern":"x"}`, "Grep is re-run in output_mode content only")
	formattest.CheckReplayable(t, New(), "Grep", `{"pattern":"x","output_mode":"content","-C":2}`, "Grep with -C is not reproduced")
	formattest.CheckReplayable(t, New(), "Read", `{"path":"a","n_lines":3}`, "Read with n_lines is not reproduced")
	formattest.CheckReplayable(t, New(), "Agent", `{"prompt":"x","description":"y"}`, "Agent is not a tool pvisor can re-run for Kimi Code")
}

// TestObservationsAreWhatTheModelSaw compares every decoded observation
// with the tool message of the recording's last model request: the decoder
// renders results as Kimi does for the model (wall time, notes).
func TestObservationsAreWhatTheModelSaw(t *testing.T) {
	data, err := os.ReadFile(corpusDir + "/kimi-2.1.0_greeter-wire.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New().Decode(bytes.NewReader(data), trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gz, err := os.ReadFile("../../testdata/e2e/sessions/kimi@2.1.0/requests.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(reqs), []byte("\n"))
	last := gjson.ParseBytes(lines[len(lines)-1]).Get("body")
	if last.Type == gjson.String {
		last = gjson.Parse(last.Str)
	}
	seen := map[string]string{}
	last.Get("messages").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").Str == "tool" {
			seen[m.Get("tool_call_id").Str] = m.Get("content").Str
		}
		return true
	})
	n := 0
	for _, a := range tr.Steps() {
		for _, c := range a.Calls {
			n++
			if got, want := c.Observation.Content, seen[c.ID]; got != want {
				t.Errorf("%s %s: decoded %q, the model saw %q", c.Name, c.ID, got, want)
			}
		}
	}
	if n != 7 || len(seen) != 7 {
		t.Errorf("%d calls decoded, %d tool messages sent", n, len(seen))
	}
}
