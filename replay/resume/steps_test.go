package resume

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/internal/clitest"
	"github.com/pvisor/pvisor/result"
)

// A resume or fork through the fake model reports the steps the agent
// made (the fake CLI answers once per launch), the fake model's script is
// played from the resumed session's turns, and a script that ran out says
// so.
func TestResumeContinuedSteps(t *testing.T) {
	for _, tc := range []struct {
		name, mode, script string
		served, exhausted  int64
		warn               bool
	}{
		{"resume", ModeResume, `{"replies":[{"text":"Added. <promise>COMPLETE</promise>"}]}`, 1, 0, false},
		{"fork", ModeFork, `{"replies":[{"text":"Forked. <promise>COMPLETE</promise>"}]}`, 1, 0, false},
		{"script exhausted", ModeResume, `{"replies":[]}`, 0, 1, true},
		{"final scripted", ModeResume, `{"replies":[],"final":"Done. <promise>COMPLETE</promise>"}`, 0, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newResumeFixture(t, tc.mode, tc.script)
			res := f.run(t)
			if res.Failure != nil {
				t.Fatalf("failure: %+v\n%s", res.Failure, res.Line())
			}
			if res.ContinuedSteps != 1 {
				t.Errorf("continued_steps %d, want 1", res.ContinuedSteps)
			}
			md := sessionMeta(t, res)
			if e := md.Get("session.continued_session_decode_error"); e.Exists() {
				t.Errorf("the continued session does not decode: %s", e.Str)
			}
			fm := md.Get("continuation.upstream.fake_model")
			if fm.Get("served").Int() != tc.served || fm.Get("script_exhausted").Int() != tc.exhausted {
				t.Errorf("fake_model %s, want served %d, exhausted %d", fm.Raw, tc.served, tc.exhausted)
			}
			if warned := strings.Contains(md.Get("warnings").Raw, "script ran out"); warned != tc.warn {
				t.Errorf("warnings %s: script-ran-out warning %v, want %v", md.Get("warnings").Raw, warned, tc.warn)
			}
		})
	}
}

// fork --after-step checks the boundary before the upstream: a step past
// the session's last says how many it has, not that a key is missing.
func TestForkAfterStepBoundaryFirst(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	f := newResumeFixture(t, ModeFork, `{"replies":[]}`)
	f.req.SessionID, f.req.SourceHome = "", ""
	f.req.Trajectory, f.req.AfterStep = clitest.SynthRollout(t, filepath.Join("..", "..", "trajectory", "codex", "testdata", "stage"), t.TempDir()), 9
	f.req.Upstream, f.req.FakeScript = "openai-responses", ""
	res := f.run(t)
	if res.Failure == nil || !strings.Contains(res.Failure.Message, "complete steps") || strings.Contains(res.Failure.Message, "API key") {
		t.Fatalf("failure %+v, want the session's step count", res.Failure)
	}
	if res.StateDir != nil {
		t.Errorf("state dir %s made before the boundary was checked", *res.StateDir)
	}
}

// The prefix's drift files (observation comparison, summary) are in the
// fork's output dir and listed as artifacts.
func TestForkAfterStepDriftArtifacts(t *testing.T) {
	f := newResumeFixture(t, ModeFork, `{"replies":[],"final":"Branched. <promise>COMPLETE</promise>"}`)
	f.req.SessionID, f.req.SourceHome = "", ""
	f.req.Trajectory, f.req.AfterStep = clitest.SynthRollout(t, filepath.Join("..", "..", "trajectory", "codex", "testdata", "stage"), t.TempDir()), 1
	res := f.run(t)
	if res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	for _, want := range []struct{ role, file string }{
		{replay.RoleObservationComparison, "observation-comparison.json"},
		{replay.RoleSummary, "replay-summary.json"},
	} {
		var found *result.Artifact
		for i := range res.Artifacts {
			if res.Artifacts[i].Role == want.role {
				found = &res.Artifacts[i]
			}
		}
		if found == nil || found.Path != filepath.Join(*res.OutputDir, want.file) {
			t.Errorf("artifact %s: %+v, want %s in the output dir", want.role, found, want.file)
			continue
		}
		if _, err := os.Stat(found.Path); err != nil {
			t.Errorf("artifact %s: %v", want.role, err)
		}
	}
}

// A resume says what it does, a line per phase, when asked to.
func TestResumeProgress(t *testing.T) {
	f := newResumeFixture(t, ModeResume, `{"replies":[{"text":"Added. <promise>COMPLETE</promise>"}]}`)
	var lines strings.Builder
	f.req.Progress = &lines
	if res := f.run(t); res.Failure != nil {
		t.Fatalf("failure: %+v", res.Failure)
	}
	for _, want := range []string{"pvisor resume: restored codex session " + fixtureSID, "continuing it with codex ", "(upstream fake)",
		"1 live step(s); session " + fixtureSID + " captured into "} {
		if !strings.Contains(lines.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, lines.String())
		}
	}
}
