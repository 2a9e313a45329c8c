//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/recorded"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/trajectory"
	claudefmt "github.com/pvisor/pvisor/trajectory/claude"
	codexfmt "github.com/pvisor/pvisor/trajectory/codex"
)

// benchStep is the after-step every agent is continued at: the earliest, so
// the continuation plays the most recorded actions (the CLI's share is the
// largest it can be, and ours is measured against real work).
const benchStep = 1

// BenchmarkContinuation times, per agent and interleaved, (a) the whole
// `pvisor replay --upstream recorded` process continuing the newest
// release's recording after benchStep, and (b) the same CLI resuming the
// same rebuilt session on its own: the home and workspace the launcher staged
// (copied at launch in a priming run), the same argv and environment, and the
// same recorded replies served straight to it at the bridge's address, with
// no pvisor in between. It reports both as ms/op and (a)/(b) as "x-vs-cli".
//
//	go test -tags e2e -run '^$' -bench Continuation -benchtime 2x ./replay/e2e/
func BenchmarkContinuation(b *testing.B) {
	pvisor := pvisorBinary(b)
	for _, agent := range []string{"claude-code", "codex", "pi", "opencode"} {
		b.Run(agent, func(b *testing.B) {
			var format trajectory.Format
			switch agent {
			case "claude-code":
				format = claudefmt.New()
			case "codex":
				format = codexfmt.New()
			default:
				format = chatFor(agent).format
			}
			s := loadRecordedSession(b, agent, format)
			enterLoopbackNetns(b)
			// One state root for all runs: the priming run probes the CLI's
			// version and every timed run finds it cached, as in real use.
			state := b.TempDir()
			base := primeBaseline(b, s, state)
			var ours, cli, before time.Duration
			var ph, phBefore phases
			older := os.Getenv("PVISOR_BENCH_BASELINE_BIN")
			// CPU (user + system) of each whole process tree: pvisor's includes
			// the CLI it ran, so the difference is what pvisor itself used.
			var oursCPU, cliCPU time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Alternate which goes first, so neither always runs on
				// caches the other warmed.
				timeOurs := func() {
					w, c := s.timePvisor(b, pvisor, state, fmt.Sprintf("r%d", i), &ph)
					ours, oursCPU = ours+w, oursCPU+c
				}
				timeCLI := func() {
					w, c := base.time(b)
					cli, cliCPU = cli+w, cliCPU+c
				}
				if i%2 == 0 {
					timeOurs()
					timeCLI()
				} else {
					timeCLI()
					timeOurs()
				}
				if older != "" {
					w, _ := s.timePvisor(b, older, state, fmt.Sprintf("old%d", i), &phBefore)
					before += w
				}
			}
			if older != "" {
				// An older pvisor (PVISOR_BENCH_BASELINE_BIN) in the same
				// loop: what a change to pvisor gained.
				b.ReportMetric(float64(before.Milliseconds())/float64(b.N), "older-ms/op")
				b.ReportMetric(float64(before)/float64(cli), "older-x-vs-cli")
				b.ReportMetric(float64(ours)/float64(before), "x-vs-older")
				phBefore.reportAs(b, "older-")
			}
			b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "pvisor-ms/op")
			b.ReportMetric(float64(cli.Milliseconds())/float64(b.N), "cli-ms/op")
			b.ReportMetric(float64(ours)/float64(cli), "x-vs-cli")
			// The same ratio against the CLI's own time inside pvisor's run
			// (no second launch: free of the baseline's staging).
			b.ReportMetric(float64(ours)/float64(ph.cli), "x-vs-in-cli")
			b.ReportMetric(float64(oursCPU.Milliseconds())/float64(b.N), "pvisor-cpu-ms/op")
			b.ReportMetric(float64(cliCPU.Milliseconds())/float64(b.N), "cli-cpu-ms/op")
			// On a loaded machine both wall times are mostly waiting for a
			// core; the CPU ratio is what pvisor adds in work.
			b.ReportMetric(float64(oursCPU)/float64(cliCPU), "cpu-x-vs-cli")
			ph.report(b)
		})
	}
}

// timePvisor runs the whole pvisor process once (the untar of the initial
// repo is not timed) and checks it continued to the end. It returns the wall
// time and the CPU time of pvisor and everything it ran.
func (s *recordedSession) timePvisor(b *testing.B, pvisor, state, runID string, ph *phases) (time.Duration, time.Duration) {
	b.StopTimer()
	work := b.TempDir()
	ws := filepath.Join(work, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xzf", filepath.Join(s.dir, s.manifest.Files["initial_repo"]), "-C", ws).CombinedOutput(); err != nil {
		b.Fatalf("unpack the initial repo: %v\n%s", err, out)
	}
	cmd := exec.Command(pvisor, "replay", "--agent", s.agent, "--trajectory", s.file, "--after-step", strconv.Itoa(benchStep),
		"--workspace", ws, "--run-id", runID, "--state-dir", state, "--output-dir", filepath.Join(work, "out"),
		"--upstream", replay.UpstreamRecorded, "--agent-entrypoint", s.bin)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + work, "TMPDIR=" + work}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b.StartTimer()
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	b.StopTimer()
	res := gjson.ParseBytes(out)
	if err != nil || res.Get("phase").Str != "continued" || res.Get("agent_status").Str != "completed" {
		b.Fatalf("pvisor replay did not continue cleanly: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	if err := ph.add(filepath.Join(state, runID, "replay-events.jsonl"), took,
		time.Duration(res.Get("metadata.continuation.duration_ms").Int())*time.Millisecond); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	return took, treeCPU(cmd.ProcessState)
}

// treeCPU is the user + system time of a reaped process and the descendants
// it reaped.
func treeCPU(st *os.ProcessState) time.Duration {
	return st.UserTime() + st.SystemTime()
}

// phases split pvisor's runs by its journal: the prefix (plan, replay,
// rebuilt session), staging (the bridge and the launcher's staging:
// OpenCode's database write), the CLI, collecting (the launcher's collect:
// OpenCode's database read; the comparison) and the rest of the process (start-up,
// version probe, result).
type phases struct{ prefix, stage, cli, collect, rest time.Duration }

func (p *phases) add(journal string, whole, cli time.Duration) error {
	data, err := os.ReadFile(journal)
	if err != nil {
		return err
	}
	at := map[string]int64{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		ev := gjson.GetBytes(line, "event")
		if name := ev.Get("data.name").Str; name != "" {
			at[name] = ev.Get("observed_at_unix_ms").Int()
		}
	}
	for _, name := range []string{"run_started", "session_rebuilt", "continuation_started", "continuation_finished", "run_finished"} {
		if at[name] == 0 {
			return fmt.Errorf("%s: no %s event", journal, name)
		}
	}
	ms := func(from, to string) time.Duration { return time.Duration(at[to]-at[from]) * time.Millisecond }
	p.prefix += ms("run_started", "session_rebuilt")
	p.stage += ms("session_rebuilt", "continuation_started")
	p.cli += cli
	p.collect += ms("continuation_started", "continuation_finished") - cli
	p.rest += whole - ms("run_started", "run_finished") + ms("continuation_finished", "run_finished")
	return nil
}

func (p *phases) report(b *testing.B) { p.reportAs(b, "") }

func (p *phases) reportAs(b *testing.B, prefix string) {
	for _, m := range []struct {
		d    time.Duration
		unit string
	}{{p.prefix, "prefix-ms/op"}, {p.stage, "stage-ms/op"}, {p.cli, "in-cli-ms/op"}, {p.collect, "collect-ms/op"}, {p.rest, "rest-ms/op"}} {
		b.ReportMetric(float64(m.d.Milliseconds())/float64(b.N), prefix+m.unit)
	}
}

// baseline is a staged session and the launch that resumes it, copied from a
// priming run, with the replies pvisor's recorded upstream played.
type baseline struct {
	launch   replay.Launch
	snapshot string // home and ws as staged
	up       *recorded.Upstream
	proto    bridge.Protocol
	played   int // distinct recorded actions the priming run served
}

// primeBaseline continues s once in process, copying the staged home and
// workspace when the CLI is about to start.
func primeBaseline(b *testing.B, s *recordedSession, state string) *baseline {
	b.Helper()
	root := b.TempDir()
	base := &baseline{snapshot: filepath.Join(root, "snapshot")}
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xzf", filepath.Join(s.dir, s.manifest.Files["initial_repo"]), "-C", ws).CombinedOutput(); err != nil {
		b.Fatalf("unpack the initial repo: %v\n%s", err, out)
	}
	var snapErr error
	req := &replay.Request{Agent: s.agent, Trajectory: s.file, AfterStep: benchStep, Workspace: ws, RunID: "prime",
		StateRoot: state, OutputRoot: filepath.Join(root, "out"), AgentEntrypoint: s.bin,
		Upstream: replay.UpstreamRecorded, IdleTimeout: time.Minute,
		Hooks: &replay.Hooks{
			Upstream: func(u bridge.Upstream) bridge.Upstream {
				base.up, _ = u.(*recorded.Upstream)
				return u
			},
			Launch: func(l replay.Launch) {
				base.launch = l
				snapErr = errors.Join(copyTree(l.Home, filepath.Join(base.snapshot, "home")),
					copyTree(l.Dir, filepath.Join(base.snapshot, "ws")))
			},
		}}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	res := replay.Run(ctx, req)
	if res.Failure != nil || snapErr != nil || base.up == nil || base.launch.Entry == "" {
		b.Fatalf("priming run: snapshot %v, recorded upstream %v\n%s", snapErr, base.up != nil, res.Line())
	}
	for _, p := range []bridge.Protocol{bridge.Anthropic, bridge.Responses, bridge.Chat} {
		if base.up.Accepts(p) {
			base.proto = p
		}
	}
	base.played = base.up.Stats().Played
	return base
}

// time restores the staged home and workspace (not timed), serves a fresh
// copy of the recorded replies at the bridge's address and runs the CLI to
// its end. The CLI must play the same recorded actions as the priming run.
// It returns the wall time and the CLI's CPU time (with its descendants).
func (base *baseline) time(b *testing.B) (time.Duration, time.Duration) {
	b.StopTimer()
	l := base.launch
	for _, d := range []string{l.Home, l.Dir, l.Temp} {
		if err := os.RemoveAll(d); err != nil {
			b.Fatal(err)
		}
	}
	if err := errors.Join(copyTree(filepath.Join(base.snapshot, "home"), l.Home), copyTree(filepath.Join(base.snapshot, "ws"), l.Dir),
		os.MkdirAll(l.Temp, 0o700)); err != nil {
		b.Fatal(err)
	}
	up := base.up.Fresh()
	u, err := url.Parse(l.Bridge)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		b.Fatalf("listen at the bridge's address: %v", err)
	}
	srv := &http.Server{Handler: serveDirect(up, base.proto), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.Entry, l.Args...)
	cmd.Env, cmd.Dir = l.Env, l.Dir
	if l.Stdin != nil {
		cmd.Stdin = bytes.NewReader(l.Stdin)
	}
	// A file, as pvisor logs it: the run ends when the CLI exits, not when
	// the last helper holding a pipe does.
	logPath := filepath.Join(filepath.Dir(base.snapshot), "cli.log")
	logf, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	b.StartTimer()
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	b.StopTimer()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		out, _ := os.ReadFile(logPath)
		b.Fatalf("the CLI alone: %v\n%s", err, tail(out))
	}
	if st := up.Stats(); st.Played != base.played {
		out, _ := os.ReadFile(logPath)
		b.Fatalf("the CLI alone played %d recorded actions, pvisor's run %d (%+v)\n%s", st.Played, base.played, st, tail(out))
	}
	b.StartTimer()
	return took, treeCPU(cmd.ProcessState)
}

// serveDirect serves up over HTTP as the CLI's model, as the bridge would
// forward to it but without its checks.
func serveDirect(up *recorded.Upstream, proto bridge.Protocol) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		res, err := up.Send(r.Context(), &bridge.Request{Protocol: proto, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		rc := http.NewResponseController(w)
		buf := make([]byte, 32<<10)
		for {
			n, err := res.Body.Read(buf)
			if n > 0 {
				w.Write(buf[:n])
				rc.Flush()
			}
			if err != nil {
				return
			}
		}
	})
}

// copyTree copies a directory with modes, times and links (cp -a).
func copyTree(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a %s %s: %v: %s", src, dst, err, out)
	}
	return nil
}

func tail(b []byte) []byte {
	if len(b) > 3000 {
		return b[len(b)-3000:]
	}
	return b
}
