package pi

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/formattest"
)

// TestChooseSemantics: a session's own records date it; the continuing
// CLI's release is used when they allow it, else the newest oracle release
// they allow.
func TestChooseSemantics(t *testing.T) {
	for _, tc := range []struct {
		name                              string
		recorded, continuing, min, before string
		release, source                   string
	}{
		{"recorded", "0.50.0", "1.6.0", "", "", "0.50.0", sourceRecorded},
		{"1.x session continued by 1.6.0", "", "1.6.0", "0.86.0", "", "1.6.0", sourceContinuing},
		{"1.x session, replay only", "", "", "0.86.0", "", "1.6.0", sourceSession},
		{"1.x session continued by 0.83.0", "", "0.83.0", "0.86.0", "", "1.6.0", sourceSession},
		{"0.73 session continued by 1.6.0", "", "1.6.0", "", "0.75.5", "0.73.1", sourceSession},
		{"0.8x session continued by 0.83.0", "", "0.83.0", "0.75.5", "0.86.0", "0.83.0", sourceContinuing},
		{"0.8x session, replay only", "", "", "0.75.5", "0.86.0", "0.83.0", sourceSession},
		{"newer than every oracle release", "", "", "2.0.0", "", "2.0.0", sourceSession},
		{"nothing known", "", "", "", "", "1.6.0", sourceDefault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := chooseSemantics(tc.recorded, tc.continuing, tc.min, tc.before)
			if s.Release != tc.release || s.Source != tc.source {
				t.Errorf("chose %s (%s), want %s (%s)", s.Release, s.Source, tc.release, tc.source)
			}
		})
	}
}

// TestSemanticsThresholds: each behaviour switches at the release Pi's
// changelog names.
func TestSemanticsThresholds(t *testing.T) {
	old, mid, cur := semanticsOf("0.73.1", ""), semanticsOf("0.83.0", ""), semanticsOf("1.6.0", "")
	if !old.trailingNewlineLine || old.editPatch || !old.writeBytes || old.fuzzyKeepsLines {
		t.Errorf("0.73.1: %+v", old)
	}
	if mid.trailingNewlineLine || !mid.editPatch || !mid.writeBytes || !mid.fuzzyKeepsLines || mid.failedBashResult || mid.grepContextFromRg {
		t.Errorf("0.83.0: %+v", mid)
	}
	if cur.writeBytes || !cur.failedBashResult || !cur.grepContextFromRg || !cur.signalExitCode {
		t.Errorf("1.6.0: %+v", cur)
	}
	if s := semanticsOf("1.5.0", ""); s.grepContextFromRg || !s.failedBashResult || s.signalExitCode {
		t.Errorf("1.5.0: %+v", s)
	}
}

// TestSessionDating: the recordings of real releases are dated by what
// they hold.
func TestSessionDating(t *testing.T) {
	for dir, want := range map[string][2]string{
		"pi@0.73.1": {"", "0.75.5"}, // an edit without a patch
		"pi@1.6.0":  {"0.86.0", ""}, // a system message
	} {
		files, _ := filepath.Glob(filepath.Join("../../testdata/e2e/sessions", dir, "*_*.jsonl"))
		if len(files) != 1 {
			t.Fatalf("%s: %v", dir, files)
		}
		_, tr := formattest.DecodeFile(t, New(), files[0])
		if got := [2]string{tr.MinVersion, tr.BeforeVersion}; got != want {
			t.Errorf("%s dated [%s, %s), want [%s, %s)", dir, got[0], got[1], want[0], want[1])
		}
	}
}

// TestOracleReleases: every release the semantics name has its oracle
// file, and every oracle file is named.
func TestOracleReleases(t *testing.T) {
	files, _ := filepath.Glob(goldenTools("*"))
	var have []string
	for _, f := range files {
		have = append(have, filepath.Base(f)[len("tools@"):len(filepath.Base(f))-len(".golden")])
	}
	want := slices.Clone(oracleReleases)
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(have, want) {
		t.Errorf("oracle files %v, oracleReleases %v", have, oracleReleases)
	}
	if _, err := os.Stat(goldenTools(oracleReleases[len(oracleReleases)-1])); err != nil {
		t.Error(err)
	}
}

// TestWriteFollowsRecord: a write's confirmation keeps the recorded
// wording whichever release the session is replayed as.
func TestWriteFollowsRecord(t *testing.T) {
	ws := t.TempDir()
	s := newSession(t, toolEnv(t, ws, "")) // the newest release: no byte count
	for orig, want := range map[string]string{
		"Successfully wrote 2 bytes to a.txt": "Successfully wrote 2 bytes to a.txt",
		"Successfully wrote to a.txt":         "Successfully wrote to a.txt",
		"":                                    "Successfully wrote to a.txt",
	} {
		if f := exec1(t, s, "write", `{"path":"a.txt","content":"hi"}`, orig); f.Content != want {
			t.Errorf("recorded %q: replayed %q, want %q", orig, f.Content, want)
		}
	}
}

// TestNormalizeFullOutputPath: the random full-output file of a truncated
// bash result is masked; the rest of the text is compared as it is.
func TestNormalizeFullOutputPath(t *testing.T) {
	n := Format.(trajectory.Normalizer)
	a := "1\n2\n\n[Showing lines 2-3 of 3. Full output: /tmp/pvisor-e2e/pi/tmp/pi-bash-0123456789abcdef.log]"
	b := "1\n2\n\n[Showing lines 2-3 of 3. Full output: /state/run/agent-tmp/pi-bash-fedcba9876543210.log]"
	if n.NormalizeObservation(a) != n.NormalizeObservation(b) {
		t.Errorf("%q != %q", n.NormalizeObservation(a), n.NormalizeObservation(b))
	}
	if c := strings.Replace(b, "lines 2-3", "lines 1-3", 1); n.NormalizeObservation(a) == n.NormalizeObservation(c) {
		t.Error("a different notice was masked away")
	}
	if s := "no pi-bash- here"; n.NormalizeObservation(s) != s {
		t.Error("text without a full-output path changed")
	}
}
