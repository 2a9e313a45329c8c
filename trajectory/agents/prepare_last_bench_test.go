package agents

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/claude"
	"github.com/pvisor/pvisor/trajectory/codex"
	"github.com/pvisor/pvisor/trajectory/pi"
)

// BenchmarkPrepareLastStep is BenchmarkPrepareOnly at the last step of the
// ~100 MB sessions, where the prefix is the whole file: its peak RSS is the
// figure to keep low (target ≤ 64 MiB: the prefix is streamed from the
// source, not held), beside sha256sum of the same file in the same loop.
// The recorded results of calls pvisor cannot run here (Claude's Task) are
// reused (--allow-stale-observations), as a user replaying so far would.
// PVISOR_BENCH_BASELINE_BIN runs an older pvisor in the same loop too.
func BenchmarkPrepareLastStep(b *testing.B) {
	bin := buildPvisor(b)
	oldBin := os.Getenv("PVISOR_BENCH_BASELINE_BIN")
	for _, tc := range []struct {
		agent string
		gen   func(testing.TB, string, int64) string
		src   string
	}{
		{claude.AgentName, bigClaude, claudeSample},
		{codex.AgentName, bigCodex, codexSample},
		{pi.AgentName, bigPi, piSample},
	} {
		b.Run(tc.agent, func(b *testing.B) {
			path := tc.gen(b, tc.src, bigTarget)
			last := lastCompleteStep(b, tc.agent, path)
			args := func() []string {
				a := prepareArgs(b, tc.agent, path)
				for i := range a {
					if a[i] == "--after-step" {
						a[i+1] = strconv.Itoa(last)
					}
				}
				return append(a, "--allow-stale-observations")
			}
			var sha, shaCPU, pv, pvCPU, old []time.Duration
			var rss, oldRSS int64
			for b.Loop() {
				c := runChild(b, "sha256sum", path)
				sha, shaCPU = append(sha, c.wall), append(shaCPU, c.cpu)
				c = runChild(b, bin, args()...)
				pv, pvCPU, rss = append(pv, c.wall), append(pvCPU, c.cpu), max(rss, c.rssKiB)
				if oldBin != "" {
					c = runChild(b, oldBin, args()...)
					old, oldRSS = append(old, c.wall), max(oldRSS, c.rssKiB)
				}
			}
			b.ReportMetric(float64(last), "after-step")
			b.ReportMetric(float64(rss)/1024, "peak-rss-MB")
			b.ReportMetric(median(pv).Seconds()/median(sha).Seconds(), "ratio-vs-sha256sum")
			b.ReportMetric(median(pvCPU).Seconds()/median(shaCPU).Seconds(), "cpu-ratio-vs-sha256sum")
			if oldBin != "" {
				b.ReportMetric(float64(oldRSS)/1024, "baseline-bin-peak-rss-MB")
				b.ReportMetric(float64(rss)/float64(oldRSS), "rss-ratio-vs-baseline-bin")
				b.ReportMetric(median(pv).Seconds()/median(old).Seconds(), "ratio-vs-baseline-bin")
			}
		})
	}
}

// lastCompleteStep is the latest step path can be cut after: its last step
// when that one has all its results.
func lastCompleteStep(b *testing.B, agent, path string) int {
	f, ok := Lookup(agent)
	if !ok {
		b.Skipf("%s not registered", agent)
	}
	r, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	t, err := f.Decode(r, trajectory.Options{SkipObservationContent: true})
	if err != nil {
		b.Fatal(err)
	}
	steps := t.Steps()
	for n := len(steps); n > 0; n-- {
		if trajectory.CheckBoundary(t, n) == nil {
			return n
		}
	}
	b.Fatalf("%s: no step to cut after", path)
	return 0
}
