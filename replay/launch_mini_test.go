package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/replay/launch/pyrunner/pyrunnertest"
	"github.com/pvisor/pvisor/result"
)

func fakeMiniVenv(t *testing.T, version string) string {
	return pyrunnertest.FakeVenv(t, "mini", "mini-swe-agent "+version)
}

// TestMiniRefusedBeforeAnythingRuns: a trajectory whose format the installed
// mini generation cannot continue is exit 11, a boundary prompt exit 2,
// both before a tool of the prefix ran.
func TestMiniRefusedBeforeAnythingRuns(t *testing.T) {
	rec := func(v string) string {
		p, _ := filepath.Abs(filepath.Join("..", "trajectory", "miniswe", "testdata", "recorded", v, "last_mini_run.traj.json"))
		return p
	}
	for _, tc := range []struct {
		name, traj, version, prompt string
		category                    string
		exit                        int
		says                        string
	}{
		{"1.x trajectory, mini 2.x", rec("1.17.5"), "2.4.6", "", result.UnsupportedVersion, 11, "mini-swe-agent 2.4.6 cannot continue a mini-swe-agent-1 trajectory (recorded with mini 1.17.5)"},
		{"2.x trajectory, mini 1.x", rec("2.4.6"), "1.17.5", "", result.UnsupportedVersion, 11, "cannot continue a mini-swe-agent-1.1 trajectory"},
		{"untested mini", rec("2.4.6"), "2.5.0", "", result.UnsupportedVersion, 11, "outside the tested range"},
		{"boundary prompt", rec("2.4.6"), "2.4.6", "go on", result.ConfigurationError, 2, "--boundary-user-prompt is not supported for mini-swe-agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "ws")
			os.Mkdir(ws, 0o755)
			req := &Request{Agent: "mini-swe-agent", Trajectory: tc.traj, AfterStep: 2, Workspace: ws, RunID: "m",
				StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"), BoundaryUserPrompt: tc.prompt,
				AgentEntrypoint: fakeMiniVenv(t, tc.version), Upstream: UpstreamRecorded, IdleTimeout: 20 * time.Second}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res := Run(ctx, req)
			if res.Failure == nil || res.Failure.Category != tc.category || result.ExitCode(res.Failure) != tc.exit ||
				*res.Phase != result.PhasePrepared || !strings.Contains(res.Failure.Message, tc.says) {
				t.Fatalf("want %s (exit %d) saying %q, got %s", tc.category, tc.exit, tc.says, res.Line())
			}
			for _, ev := range readEvents(t, filepath.Join(dir, "out", "m", "replay-events.jsonl")) {
				if ev == "tool_started" {
					t.Error("a tool ran although the continuation was refused up front")
				}
			}
		})
	}
}
