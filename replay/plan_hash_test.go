package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// TestPlanHashesTheWholeFile: the manifest's SHA-256 is the file's, whether
// the decoder read all of it (several reads for a 2 MB file) or stopped
// before a torn final line.
func TestPlanHashesTheWholeFile(t *testing.T) {
	corpus := "../testdata/trajectories/"
	for _, tc := range []struct {
		name, agent, src, tail string
	}{
		{"small claude", "claude-code", "claude-code/agentcmd_full-session-four.jsonl", ""},
		{"claude with torn tail", "claude-code", "claude-code/agentcmd_full-session-four.jsonl", `{"type":"assistant","uuid":`},
		{"2 MB pi", "pi", "pi/pimono_before-compaction.jsonl", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(corpus + tc.src)
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, tc.tail...)
			path := filepath.Join(t.TempDir(), "session.jsonl")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := BuildPlan(&Request{Agent: tc.agent, Trajectory: path, AfterStep: 1, Mode: PrepareOnly})
			if err != nil {
				t.Fatal(err)
			}
			if tc.tail != "" && p.Trajectory.TornTail == nil {
				t.Fatal("the torn tail was not noticed; the case tests nothing")
			}
			want := sha256.Sum256(data)
			if got := p.Manifest.Source.SHA256; got != hex.EncodeToString(want[:]) {
				t.Errorf("manifest sha256 %s, file's %x", got, want)
			}
		})
	}
}
