package run

import (
	"bytes"
	"context"
	"os/exec"
	"sort"
	"testing"
	"time"
)

// BenchmarkShellOverhead measures one shell call through run (stateless and
// with cwd carry-over) against plain os/exec of the same `bash -c` command
// with captured stdout/stderr, interleaved in the same loop so both see the
// same machine load. Each iteration runs all three; the reported metrics
// are per call: p50 of each, the p50 overheads and their ratios.
func BenchmarkShellOverhead(b *testing.B) {
	r, err := NewRunner(Options{Env: testEnv, TempDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	dir := b.TempDir()
	sess, err := r.NewSession(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const script = "echo hi"
	var base, stateless, session []time.Duration
	for b.Loop() {
		t0 := time.Now()
		cmd := exec.Command("/bin/bash", "-c", script)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr, cmd.Dir, cmd.Env = &out, &errb, dir, testEnv
		if err := cmd.Run(); err != nil || out.String() != "hi\n" {
			b.Fatalf("baseline: %v %q", err, out.String())
		}
		t1 := time.Now()
		res, err := r.Shell(ctx, ShellRequest{Command: script, Dir: dir})
		if err != nil || res.Stdout.String() != "hi\n" {
			b.Fatalf("Shell: %v %q", err, res.Stdout.String())
		}
		t2 := time.Now()
		res, err = sess.Shell(ctx, ShellRequest{Command: script})
		if err != nil || res.Stdout.String() != "hi\n" {
			b.Fatalf("Session.Shell: %v %q", err, res.Stdout.String())
		}
		t3 := time.Now()
		base = append(base, t1.Sub(t0))
		stateless = append(stateless, t2.Sub(t1))
		session = append(session, t3.Sub(t2))
	}
	pb, ps, pc := p50(base), p50(stateless), p50(session)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(pb), "exec-p50-ms")
	b.ReportMetric(ms(ps), "shell-p50-ms")
	b.ReportMetric(ms(pc), "session-p50-ms")
	b.ReportMetric(ms(ps-pb), "shell-overhead-p50-ms")
	b.ReportMetric(ms(pc-pb), "session-overhead-p50-ms")
	b.ReportMetric(float64(ps)/float64(pb), "shell/exec")
	b.ReportMetric(float64(pc)/float64(pb), "session/exec")
}

func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
