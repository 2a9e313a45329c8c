package replay

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReplayedCallOverhead measures what pvisor adds per re-run call:
// a Codex rollout of 50 `shell` calls of `true` replayed through the whole
// engine (decode, journal with two fsyncs per call, native formatting,
// comparison, rebuild), against running `true` 50 times with plain
// os/exec in the same run. Reported: per-call overhead and the ratio.
func BenchmarkReplayedCallOverhead(b *testing.B) {
	const calls = 50
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString(`{"timestamp":"2025-09-24T19:22:20.000Z","type":"session_meta","payload":{"id":"01997e76-d124-7592-9cac-2ec05abbca08","cwd":"` + dir + `","cli_version":"0.40.0"}}` + "\n")
	sb.WriteString(`{"timestamp":"2025-09-24T19:22:21.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}` + "\n")
	for i := 0; i < calls; i++ {
		fmt.Fprintf(&sb, `{"timestamp":"2025-09-24T19:22:22.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"true\"]}","call_id":"c%d"}}`+"\n", i)
		fmt.Fprintf(&sb, `{"timestamp":"2025-09-24T19:22:23.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c%d","output":"{\"output\":\"\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"}}`+"\n", i)
	}
	traj := filepath.Join(dir, "rollout.jsonl")
	os.WriteFile(traj, []byte(sb.String()), 0o644)

	var plain, engine float64
	runs := 0
	b.Run("plain-os-exec", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for j := 0; j < calls; j++ {
				if err := exec.Command("true").Run(); err != nil {
					b.Fatal(err)
				}
			}
		}
		plain = float64(b.Elapsed().Nanoseconds()) / float64(b.N*calls)
	})
	b.Run("pvisor-replay", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			runs++
			run := fmt.Sprintf("r%d", runs)
			res := Run(context.Background(), &Request{Agent: "codex", Trajectory: traj, AfterStep: calls, Mode: ReplayOnly,
				Workspace: dir, RunID: run, StateRoot: dir + "/state", OutputRoot: dir + "/out"})
			if res.Failure != nil || res.ReplayedToolCalls != calls {
				b.Fatalf("%+v", res.Failure)
			}
		}
		engine = float64(b.Elapsed().Nanoseconds()) / float64(b.N*calls)
		if plain > 0 {
			b.ReportMetric((engine-plain)/1e6, "overhead-ms/call")
			b.ReportMetric(engine/plain, "x-plain")
		}
	})
}
