package replay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/replay/launch/pyrunner/pyrunnertest"
	"github.com/pvisor/pvisor/result"
)

var ohRecorded, _ = filepath.Abs(filepath.Join("..", "trajectory", "openhands", "testdata", "recorded", "1.58.2", "events.jsonl"))

func fakeOHVenv(t *testing.T, version string) string {
	return pyrunnertest.FakeVenv(t, "openhands-sdk", "openhands-sdk "+version)
}

// TestOpenHandsRefusedBeforeAnythingRuns: V0 trajectories and SDK
// releases outside the tested range are exit 11, a boundary prompt exit
// 2, before a tool of the prefix ran.
func TestOpenHandsRefusedBeforeAnythingRuns(t *testing.T) {
	v0, _ := filepath.Abs(filepath.Join("..", "testdata", "trajectories", "openhands", "ohands_trajs_basic.json"))
	for _, tc := range []struct {
		name, traj, version, prompt string
		category                    string
		exit                        int
		says                        string
	}{
		{"V0", v0, "1.58.2", "", result.UnsupportedAgent, 11, "continuing an OpenHands V0 trajectory"},
		{"untested SDK", ohRecorded, "1.59.0", "", result.UnsupportedVersion, 11, "outside the tested range"},
		{"boundary prompt", ohRecorded, "1.58.2", "go on", result.ConfigurationError, 2, "--boundary-user-prompt is not supported for openhands"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "ws")
			os.Mkdir(ws, 0o755)
			req := &Request{Agent: "openhands", Trajectory: tc.traj, AfterStep: 1, Workspace: ws, RunID: "o",
				StateRoot: filepath.Join(dir, "state"), OutputRoot: filepath.Join(dir, "out"), BoundaryUserPrompt: tc.prompt,
				AgentEntrypoint: fakeOHVenv(t, tc.version), Upstream: UpstreamRecorded, IdleTimeout: 20 * time.Second}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res := Run(ctx, req)
			if res.Failure == nil || res.Failure.Category != tc.category || result.ExitCode(res.Failure) != tc.exit ||
				!strings.Contains(res.Failure.Message, tc.says) {
				t.Fatalf("want %s (exit %d) saying %q, got %s", tc.category, tc.exit, tc.says, res.Line())
			}
			if ev, err := os.ReadFile(filepath.Join(dir, "out", "o", "replay-events.jsonl")); err == nil && bytes.Contains(ev, []byte("tool_started")) {
				t.Error("a tool ran although the continuation was refused up front")
			}
		})
	}
}
