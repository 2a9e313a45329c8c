package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// benchSession is a two-step Claude Code session; with after_steps [1, 2]
// and 50 repeats it makes a 100-run prepare-only study.
const benchSession = `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"role":"user","content":"list files"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls -la"}}]}}
{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt"}]}}
{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"cat a.txt"}}]}}
{"type":"user","uuid":"u3","parentUuid":"a2","sessionId":"s1","version":"2.1.7","cwd":"/w","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"hello"}]}}
`

const benchRuns = 100

// BenchmarkBatch measures, in one run, 100 prepare-only replays three ways:
// as 100 separate `pvisor replay` processes (the baseline), as one `pvisor
// batch run --jobs 1`, and as `--jobs 2`. It reports the --jobs 2 speedup
// over --jobs 1 and the batch's overhead per run over the baseline.
func BenchmarkBatch(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	session := filepath.Join(dir, "s.jsonl")
	study := filepath.Join(dir, "study.toml")
	os.WriteFile(session, []byte(benchSession), 0o644)
	os.WriteFile(study, []byte("[batch]\noutput_dir = \"out\"\n[replay]\nprepare_only = true\n[[runs]]\nagent = \"claude-code\"\n"+
		"trajectories = [\"s.jsonl\"]\nafter_steps = [1, 2]\nrepeats = 50\n"), 0o644)
	pvisor := func(args ...string) {
		cmd := exec.Command(self, args...)
		cmd.Args[0] = "pvisor"
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("pvisor %v: %v\n%s", args, err, out)
		}
	}
	var alone, jobs1, jobs2 time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		for k := range benchRuns {
			pvisor("replay", "--prepare-only", "--agent", "claude-code", "--trajectory", session, "--after-step", fmt.Sprint(1+k%2),
				"--run-id", fmt.Sprintf("r%d-%d", i, k), "--state-dir", filepath.Join(dir, "alone-state"), "--output-dir", filepath.Join(dir, "alone-out"))
		}
		alone += time.Since(start)
		start = time.Now()
		pvisor("batch", "run", study, "--jobs", "1", "--output-dir", filepath.Join(dir, fmt.Sprint("j1-", i)))
		jobs1 += time.Since(start)
		start = time.Now()
		pvisor("batch", "run", study, "--jobs", "2", "--output-dir", filepath.Join(dir, fmt.Sprint("j2-", i)))
		jobs2 += time.Since(start)
	}
	b.ReportMetric(float64(jobs1)/float64(jobs2), "jobs2-speedup")
	b.ReportMetric(float64(jobs1-alone)/float64(b.N*benchRuns)/1e6, "overhead-ms/run")
	b.ReportMetric(float64(alone)/float64(b.N*benchRuns)/1e6, "replay-alone-ms/run")
}
