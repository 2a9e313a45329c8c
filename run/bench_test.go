package run

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"sort"
	"syscall"
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

// BenchmarkIsolationOverhead is the per-call cost of Isolation: the same
// Session call without it (today's path) and with it (init re-exec, new
// PID and mount namespaces, /proc mount, capability drop, RLIMIT_DATA via
// a ptrace stop), with NoNetwork on top, and with the run's memory cgroup
// in place of RLIMIT_DATA (joined by each init, no ptrace stop), interleaved
// in one loop.
func BenchmarkIsolationOverhead(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("isolation needs root")
	}
	ctx := context.Background()
	dir := b.TempDir()
	cg, err := NewMemoryCgroup(8 << 30)
	if err != nil {
		b.Skipf("no memory cgroup: %v", err)
	}
	defer cg.Close()
	sessions := benchSessions(b, dir, []Isolation{{}, {Enabled: true, DataLimit: 8 << 30}, {Enabled: true, DataLimit: 8 << 30, NoNetwork: true}, {Enabled: true, Memory: cg}})
	times := make([][]time.Duration, len(sessions))
	for b.Loop() {
		for i, s := range sessions {
			t0 := time.Now()
			res, err := s.Shell(ctx, ShellRequest{Command: "echo hi"})
			if err != nil || res.Stdout.String() != "hi\n" {
				b.Fatalf("session %d: %v %q", i, err, res.Stdout.String())
			}
			times[i] = append(times[i], time.Since(t0))
		}
	}
	base, iso, net := p50(times[0]), p50(times[1]), p50(times[2])
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(base), "plain-p50-ms")
	b.ReportMetric(ms(iso), "isolated-p50-ms")
	b.ReportMetric(ms(net), "isolated-nonet-p50-ms")
	b.ReportMetric(float64(iso)/float64(base), "isolated/plain")
	b.ReportMetric(float64(net)/float64(base), "isolated-nonet/plain")
	cgroup := p50(times[3])
	b.ReportMetric(ms(cgroup), "isolated-cgroup-p50-ms")
	b.ReportMetric(float64(cgroup)/float64(base), "isolated-cgroup/plain")
	b.ReportMetric(float64(cgroup)/float64(iso), "isolated-cgroup/isolated-rlimit")
}

// BenchmarkIsolationCPU is the CPU (user + system, this process and its
// reaped children: the init and the tool) of one isolated call against
// the same call without isolation, interleaved in one loop: what each
// replayed call pays for its init, namespaces and privilege drop. The wall
// times of BenchmarkIsolationOverhead move with the machine's load; CPU
// barely does.
func BenchmarkIsolationCPU(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("isolation needs root")
	}
	ctx := context.Background()
	dir := b.TempDir()
	isos := []Isolation{{}, {Enabled: true, DataLimit: 8 << 30}, {Enabled: true, DataLimit: 8 << 30, NoNetwork: true, WriteRoots: WriteRootsFor(dir)}}
	sessions := benchSessions(b, dir, isos)
	cpu := make([]time.Duration, len(sessions))
	for b.Loop() {
		for i, s := range sessions {
			c0 := selfAndChildrenCPU(b)
			res, err := s.Shell(ctx, ShellRequest{Argv: []string{"/bin/true"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("session %d: %v %d %s", i, err, res.ExitCode, res.Stderr.String())
			}
			cpu[i] += selfAndChildrenCPU(b) - c0
		}
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	b.ReportMetric(ms(cpu[0]), "plain-cpu-ms")
	b.ReportMetric(ms(cpu[1]), "isolated-cpu-ms")
	b.ReportMetric(ms(cpu[2]), "isolated-nonet-landlock-cpu-ms")
	b.ReportMetric(ms(cpu[1]-cpu[0]), "isolation-cpu-over-plain-ms")
	b.ReportMetric(ms(cpu[2]-cpu[0]), "nonet-landlock-cpu-over-plain-ms")
}

// benchSessions opens a session in dir for each isolation, closed with
// the benchmark.
func benchSessions(b *testing.B, dir string, isos []Isolation) []*Session {
	var sessions []*Session
	for _, iso := range isos {
		r, err := NewRunner(Options{Env: testEnv, TempDir: b.TempDir(), Isolation: iso})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		s, err := r.NewSession(dir)
		if err != nil {
			b.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	return sessions
}

func selfAndChildrenCPU(b *testing.B) time.Duration {
	var self, kids syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids) != nil {
		b.Fatal("getrusage")
	}
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
}
