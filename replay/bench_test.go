package replay

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pvisor/pvisor/replay/toolenv"
)

// BenchmarkReplayedCallOverhead measures what pvisor adds per re-run call:
// a Codex rollout of 50 `shell` calls of `true` replayed through the whole
// engine (decode, journal with two fsyncs per call, native formatting,
// comparison, rebuild), against running `true` 50 times with plain
// os/exec, interleaved in one loop so both see the same load. Reported:
// the p50 per-call time of each and the p50 overhead per call and ratio.
// As root every replayed call also runs isolated (own PID and mount
// namespace, see BenchmarkIsolationOverhead in run); the "bare" figures
// are the same replay with isolation off, what the engine itself adds.
func BenchmarkReplayedCallOverhead(b *testing.B) {
	const calls = 50
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString(`{"timestamp":"2025-09-24T19:22:20.000Z","type":"session_meta","payload":{"id":"01997e76-d124-7592-9cac-2ec05abbca08","cwd":"` + ws + `","cli_version":"0.40.0"}}` + "\n")
	sb.WriteString(`{"timestamp":"2025-09-24T19:22:21.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}` + "\n")
	for i := 0; i < calls; i++ {
		fmt.Fprintf(&sb, `{"timestamp":"2025-09-24T19:22:22.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"true\"]}","call_id":"c%d"}}`+"\n", i)
		fmt.Fprintf(&sb, `{"timestamp":"2025-09-24T19:22:23.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c%d","output":"{\"output\":\"\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.0}}"}}`+"\n", i)
	}
	traj := filepath.Join(dir, "rollout.jsonl")
	if err := os.WriteFile(traj, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	// cpu is the CPU time (user + system) of this process and its reaped
	// children: unlike the wall time it barely moves with the machine's load,
	// so it shows what the engine costs per call when the p50s are noise.
	cpu := func() time.Duration {
		var self, kids syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids) != nil {
			b.Fatal("getrusage")
		}
		return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
	}
	var cpuPlain, cpuBare, cpuIsolated time.Duration
	runs := 0
	replay := func(isolate bool) time.Duration {
		defer func(old bool) { toolenv.NoIsolation = old }(toolenv.NoIsolation)
		toolenv.NoIsolation = !isolate
		runs++
		start := time.Now()
		res := Run(context.Background(), &Request{Agent: "codex", Trajectory: traj, AfterStep: calls, Mode: ReplayOnly,
			Workspace: ws, RunID: fmt.Sprintf("r%d", runs), StateRoot: dir + "/state", OutputRoot: dir + "/out"})
		if res.Failure != nil || res.ReplayedToolCalls != calls {
			b.Fatalf("%+v", res.Failure)
		}
		return time.Since(start) / calls
	}
	var plain, bare, isolated []time.Duration
	for b.Loop() {
		c0, start := cpu(), time.Now()
		for j := 0; j < calls; j++ {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
		plain = append(plain, time.Since(start)/calls)
		c1 := cpu()
		bare = append(bare, replay(false))
		c2 := cpu()
		isolated = append(isolated, replay(true))
		cpuPlain, cpuBare, cpuIsolated = cpuPlain+c1-c0, cpuBare+c2-c1, cpuIsolated+cpu()-c2
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	p, e, i := median(plain), median(bare), median(isolated)
	b.ReportMetric(ms(p), "exec-p50-ms/call")
	b.ReportMetric(ms(e-p), "overhead-p50-ms/call")
	b.ReportMetric(float64(e)/float64(p), "x-plain")
	b.ReportMetric(ms(i-p), "isolated-overhead-p50-ms/call")
	b.ReportMetric(float64(i)/float64(p), "isolated-x-plain")
	perCall := func(d time.Duration) float64 { return ms(d) / float64(b.N*calls) }
	b.ReportMetric(perCall(cpuPlain), "exec-cpu-ms/call")
	b.ReportMetric(perCall(cpuBare-cpuPlain), "cpu-overhead-ms/call")
	b.ReportMetric(perCall(cpuIsolated-cpuPlain), "isolated-cpu-overhead-ms/call")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
