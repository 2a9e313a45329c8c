package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pvisor/pvisor/result/pvisorref"
)

// releaseBinary builds the binary as `make build` does: the test binary
// itself links the test-only packages, whose package init would be counted
// as start-up.
//
// The binary is then copied, as an install (pip, cp) writes it: the same
// bytes as the linker left them in the page cache started 20-30% slower
// (more page faults: smaller folios to map around each fault), so an A/A
// run against a copied PVISOR_BENCH_BASELINE_BIN reported 1.2×.
func releaseBinary(b *testing.B) string {
	dir := b.TempDir()
	built := filepath.Join(dir, "pvisor.linked")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", built, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	data, err := os.ReadFile(built)
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "pvisor")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		b.Fatal(err)
	}
	return bin
}

// childCPU runs argv to completion and returns the user + system time of
// the process and everything it waited for.
func childCPU(b *testing.B, env []string, argv ...string) time.Duration {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %v\n%s", argv, err, out)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// toolInitCPU starts bin as a tool init without arguments: it exits 126
// (toolinit.ExitSetup) at once, its report going nowhere.
func toolInitCPU(b *testing.B, bin string) time.Duration {
	cmd := &exec.Cmd{Path: bin, Args: []string{"pvisor-tool-init"}}
	if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 126 {
		b.Fatalf("tool init without arguments: %v (want exit 126)", err)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkProcessStart is the CPU of `pvisor --version` (runtime start
// plus every package init: what each process of a batch pays, target
// ≤ 2 ms) against /bin/true started the same way, interleaved in one loop.
// GODEBUG=inittrace=1 pvisor --version shows which package costs what.
// PVISOR_BENCH_BASELINE_BIN=/path/to/an/older/pvisor runs that binary in
// the same loop too. tool-init-start-cpu-ms is the binary started as an
// isolated call's init (argv[0] pvisor-tool-init) that stops at its
// argument check: what every isolated call pays before any namespace work
// (the runtime and the few package inits before package run/toolinit's,
// which checks argv[0]).
func BenchmarkProcessStart(b *testing.B) {
	bin := releaseBinary(b)
	old := os.Getenv("PVISOR_BENCH_BASELINE_BIN")
	const reps = 50
	var pv, base, oldCPU, toolInit time.Duration
	n := 0
	for b.Loop() {
		for i := range reps {
			base += childCPU(b, os.Environ(), "/bin/true")
			// Which binary starts first alternates, so that neither
			// always follows /bin/true.
			if old != "" && i%2 == 1 {
				oldCPU += childCPU(b, os.Environ(), old, "--version")
			}
			pv += childCPU(b, os.Environ(), bin, "--version")
			if old != "" && i%2 == 0 {
				oldCPU += childCPU(b, os.Environ(), old, "--version")
			}
			toolInit += toolInitCPU(b, bin)
		}
		n += reps
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(n) }
	b.ReportMetric(ms(pv), "start-cpu-ms")
	b.ReportMetric(ms(base), "true-cpu-ms")
	b.ReportMetric(float64(pv)/float64(base), "start/true")
	b.ReportMetric(ms(toolInit), "tool-init-start-cpu-ms")
	if old != "" {
		b.ReportMetric(ms(oldCPU), "baseline-bin-start-cpu-ms")
		b.ReportMetric(float64(pv)/float64(oldCPU), "start/baseline-bin")
	}
}

// BenchmarkReplayedCallCLI replays, as a whole `pvisor replay --replay-only`
// process, a Codex rollout of 200 `exec_command` calls of `true` (run as
// `bash -lc true`; isolated when run as root: each call's init, namespaces,
// /proc), against the agent's own shell: the same 200 `bash -lc true` run
// one after another, interleaved in one loop. Reported per call: the CPU of
// each and pvisor's CPU over the shell's (target ≤ +1.5 ms), and the wall
// times likewise. HOME is an empty directory for both, so the machine's own
// login scripts weigh on neither. pVisor 0.3.1 (pvisorref; make bench
// installs it) replays the same rollout in the same loop, its whole prefix
// being one step there, and pvisor's CPU and wall are reported over its
// (target: CPU ≤ 1×). PVISOR_BENCH_BASELINE_BIN=/path/to/an/older/pvisor
// replays with that binary in the same loop too.
func BenchmarkReplayedCallCLI(b *testing.B) {
	bin := releaseBinary(b)
	old := os.Getenv("PVISOR_BENCH_BASELINE_BIN")
	const calls = 200
	dir := b.TempDir()
	ws, home := filepath.Join(dir, "ws"), filepath.Join(dir, "home")
	for _, d := range []string{ws, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	var sb strings.Builder
	sb.WriteString(`{"timestamp":"2025-09-24T19:22:20.000Z","type":"session_meta","payload":{"id":"01997e76-d124-7592-9cac-2ec05abbca08","cwd":"` + ws + `","cli_version":"0.40.0"}}` + "\n")
	sb.WriteString(`{"timestamp":"2025-09-24T19:22:21.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}` + "\n")
	// exec_command rather than the older shell tool: pVisor replays only it.
	args, _ := json.Marshal(map[string]any{"cmd": "true", "workdir": ws})
	for i := range calls {
		call, _ := json.Marshal(map[string]any{"type": "function_call", "name": "exec_command", "arguments": string(args), "call_id": fmt.Sprint("c", i)})
		out, _ := json.Marshal(map[string]any{"type": "function_call_output", "call_id": fmt.Sprint("c", i), "output": "Process exited with code 0\nOutput:\n"})
		fmt.Fprintf(&sb, `{"timestamp":"2025-09-24T19:22:22.000Z","type":"response_item","payload":%s}`+"\n", call)
		fmt.Fprintf(&sb, `{"timestamp":"2025-09-24T19:22:23.000Z","type":"response_item","payload":%s}`+"\n", out)
	}
	traj := filepath.Join(dir, "rollout.jsonl")
	if err := os.WriteFile(traj, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+home, "SHELL=/bin/bash")
	var shellCPU, pvCPU, oldCPU, refCPU, shellWall, pvWall, refWall time.Duration
	runs := 0
	replayArgs := func(id string) []string {
		return []string{"--agent", "codex", "--trajectory", traj, "--replay-only", "--workspace", ws, "--run-id", id,
			"--state-dir", filepath.Join(dir, "state"), "--output-dir", filepath.Join(dir, "out")}
	}
	replay := func(bin, id string) time.Duration {
		return childCPU(b, env, append([]string{bin, "replay", "--after-step", fmt.Sprint(calls)}, replayArgs(id)...)...)
	}
	ref, missing := pvisorref.Bin()
	var refArgs []string
	if ref != "" {
		// pVisor probes the pinned Codex release even without a
		// continuation: a stand-in prints it.
		stand := filepath.Join(dir, "codex")
		if err := os.WriteFile(stand, []byte("#!/bin/sh\necho 'codex-cli 0.149.0'\n"), 0o755); err != nil {
			b.Fatal(err)
		}
		refArgs = []string{"--agent-entrypoint", stand, "--after-step", "1"}
		if why := pvisorref.Refusal(ref, append(refArgs, replayArgs("probe")...)...); why != "" {
			b.Fatalf("pVisor %s refuses the rollout: %s", pvisorref.Version, why)
		}
	} else {
		b.Log(missing)
	}
	for b.Loop() {
		t0 := time.Now()
		for range calls {
			shellCPU += childCPU(b, env, "bash", "-lc", "true")
		}
		t1 := time.Now()
		runs++
		pvCPU += replay(bin, fmt.Sprint("r", runs))
		t2 := time.Now()
		shellWall, pvWall = shellWall+t1.Sub(t0), pvWall+t2.Sub(t1)
		if ref != "" {
			refCPU += childCPU(b, env, append(append([]string{ref}, refArgs...), replayArgs(fmt.Sprint("ref", runs))...)...)
			refWall += time.Since(t2)
		}
		if old != "" {
			oldCPU += replay(old, fmt.Sprint("old", runs))
		}
	}
	var res struct {
		ReplayedToolCalls int `json:"replayed_tool_calls"`
		Metadata          struct {
			ToolIsolation struct {
				Mechanisms []string `json:"mechanisms"`
			} `json:"tool_isolation"`
		} `json:"metadata"`
	}
	if ref != "" {
		data, err := os.ReadFile(filepath.Join(dir, "out", "ref1", "result.json"))
		if err != nil || json.Unmarshal(data, &res) != nil || res.ReplayedToolCalls != calls {
			b.Fatalf("pVisor's replay: %v %.300s", err, data)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "out", "r1", "result.json"))
	if err != nil || json.Unmarshal(data, &res) != nil || res.ReplayedToolCalls != calls {
		b.Fatalf("replay: %v %.300s", err, data)
	}
	isolated := 0.0
	if slices.Contains(res.Metadata.ToolIsolation.Mechanisms, "pid-namespace") {
		isolated = 1
	}
	per := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(runs*calls) }
	b.ReportMetric(isolated, "isolated")
	b.ReportMetric(per(shellCPU), "bash-lc-cpu-ms/call")
	b.ReportMetric(per(pvCPU), "replayed-cpu-ms/call")
	b.ReportMetric(per(pvCPU-shellCPU), "cpu-over-bash-lc-ms/call")
	b.ReportMetric(float64(pvCPU)/float64(shellCPU), "cpu/bash-lc")
	b.ReportMetric(per(pvWall)-per(shellWall), "wall-over-bash-lc-ms/call")
	b.ReportMetric(float64(pvWall)/float64(shellWall), "wall/bash-lc")
	if ref != "" {
		b.ReportMetric(per(refCPU), "pvisor-sandbox-cpu-ms/call")
		b.ReportMetric(per(refCPU-shellCPU), "pvisor-sandbox-cpu-over-bash-lc-ms/call")
		b.ReportMetric(float64(pvCPU)/float64(refCPU), "cpu/pvisor-sandbox")
		b.ReportMetric(float64(pvWall)/float64(refWall), "wall/pvisor-sandbox")
	}
	if old != "" {
		b.ReportMetric(per(oldCPU-shellCPU), "baseline-bin-cpu-over-bash-lc-ms/call")
		b.ReportMetric(float64(oldCPU)/float64(shellCPU), "baseline-bin-cpu/bash-lc")
	}
}
