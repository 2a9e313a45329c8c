package run

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkContainerOverhead is the per-call cost of --executor container
// over host isolation: the same static busybox `sh -c 'echo hi'`, run from
// the host's copy under Isolation and inside an overlay of the busybox
// root (binds, /dev, pivot_root), interleaved in one loop. CPU is the
// calls' children's user+system time (the init and the tool), from
// getrusage; wall time is the p50.
func BenchmarkContainerOverhead(b *testing.B) {
	root := requireContainer(b)
	ws := b.TempDir()
	host, err := NewRunner(Options{Env: testEnv, TempDir: b.TempDir(), Isolation: Isolation{Enabled: true, DataLimit: 8 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close()
	cont, _ := containerRunner(b, ws, Isolation{DataLimit: 8 << 30})
	ctx := context.Background()
	runners := []*Runner{host, cont}
	argv := [][]string{{filepath.Join(root, "bin", "busybox"), "sh", "-c", "echo hi"}, {"/bin/busybox", "sh", "-c", "echo hi"}}
	wall := make([][]time.Duration, 2)
	cpu := make([]time.Duration, 2)
	childCPU := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	n := 0
	for b.Loop() {
		for i, r := range runners {
			c0, t0 := childCPU(), time.Now()
			res, err := r.Shell(ctx, ShellRequest{Argv: argv[i], Dir: ws})
			if err != nil || res.Stdout.String() != "hi\n" {
				b.Fatalf("runner %d: %v %q %q", i, err, res.Stdout.String(), res.Stderr.String())
			}
			wall[i] = append(wall[i], time.Since(t0))
			cpu[i] += childCPU() - c0
		}
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	hw, cw := p50(wall[0]), p50(wall[1])
	hc, cc := cpu[0]/time.Duration(n), cpu[1]/time.Duration(n)
	b.ReportMetric(ms(hw), "host-iso-p50-ms")
	b.ReportMetric(ms(cw), "container-p50-ms")
	b.ReportMetric(float64(cw)/float64(hw), "container/host-wall")
	b.ReportMetric(ms(hc), "host-iso-cpu-ms/call")
	b.ReportMetric(ms(cc), "container-cpu-ms/call")
	b.ReportMetric(float64(cc)/float64(hc), "container/host-cpu")
}
