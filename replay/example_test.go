package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
)

// A prepare-only replay of a session the real Codex CLI recorded: the
// boundary is checked and planned, the native prefix written, and nothing
// runs. The result is what `pvisor replay --prepare-only` prints.
func ExampleRun() {
	rollouts, _ := filepath.Glob("../testdata/e2e/sessions/codex@0.171.0/rollout-*.jsonl")
	tmp, err := os.MkdirTemp("", "pvisor-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)

	res := replay.Run(context.Background(), &replay.Request{
		Agent:      "codex",
		Trajectory: rollouts[0],
		AfterStep:  3,
		Mode:       replay.PrepareOnly,
		RunID:      "example",
		StateRoot:  filepath.Join(tmp, "state"),
		OutputRoot: filepath.Join(tmp, "output"),
	})
	fmt.Println("exit code:", result.ExitCode(res.Failure))
	fmt.Println(*res.Phase, res.Quality, res.AgentStatus)
	fmt.Println("agent:", res.Agent.Type, *res.Agent.Version)
	fmt.Println("prefix model turns:", res.PrefixModelTurns, "replayed calls:", res.ReplayedToolCalls)
	for _, a := range res.Artifacts {
		rel, _ := filepath.Rel(*res.OutputDir, a.Path)
		fmt.Printf("%-22s %-26s %s\n", a.Role, a.Format, rel)
	}
	// Output:
	// exit code: 0
	// prepared verified not_started
	// agent: codex 0.171.0
	// prefix model turns: 3 replayed calls: 0
	// playback_plan          sandbox-playback/plan-v1   manifest.json
	// prepared_native_prefix codex/native-jsonl-0.171.0 native/prepared-prefix.jsonl
	// replay_events          sandbox-playback/events-v1 replay-events.jsonl
	// replay_summary         sandbox-playback/summary-v1 replay-summary.json
}
