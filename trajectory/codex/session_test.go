package codex

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pvisor/pvisor/trajectory/session/sessiontest"
)

const sessionRecording = "../../testdata/e2e/sessions/codex@0.171.0/rollout-2026-11-29T23-16-19-01a22998-569d-74b2-aebf-25f39bc1a17a.jsonl"

func TestSessionRecordings(t *testing.T) {
	sessiontest.Recordings(t, Sessions(), []string{sessionRecording}, nil, func(t *testing.T, name, got string) {
		golden := filepath.Join("testdata", "golden", "session-rewrite_"+name+".txt")
		if updating() {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if d := cmp.Diff(string(want), got); d != "" {
			t.Errorf("%s differs (-want +got):\n%s", golden, d)
		}
	})
}

func TestSessionLocate(t *testing.T) {
	sessiontest.Locate(t, Sessions(), func(id string, variant int) string {
		day := []string{"2026/11/29", "2026/11/30"}[variant]
		return filepath.Join("sessions", day, "rollout-"+[]string{"2026-11-29T23-16-19", "2026-11-30T01-02-03"}[variant]+"-"+id+".jsonl")
	})
}

func TestRolloutID(t *testing.T) {
	for name, want := range map[string]string{
		"rollout-2026-11-29T23-16-19-01a22998-569d-74b2-aebf-25f39bc1a17a.jsonl": "01a22998-569d-74b2-aebf-25f39bc1a17a",
		"rollout-2026-11-29-01a22998.jsonl":                                      "",
		"rollout-2026-11-29T23-16-19-x.json":                                     "",
	} {
		if got, _ := RolloutID(name); got != want {
			t.Errorf("RolloutID(%s) = %q, want %q", name, got, want)
		}
	}
}
