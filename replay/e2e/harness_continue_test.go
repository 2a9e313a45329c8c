//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// recordedSession is a recorded session (testdata/e2e/sessions/<agent>) and
// what it takes to continue it with the real CLI.
type recordedSession struct {
	agent, dir, file, bin string
	format                trajectory.Format
	traj                  *trajectory.Trajectory
	requests              []fakemodel.Request // the main requests the real CLI sent while recording
	manifest              manifest
}

// loadRecordedSession skips the test when the agent's CLI (bin under the e2e
// bin dir) is not installed: the continuation needs the real one.
func loadRecordedSession(t *testing.T, agent, bin string, format trajectory.Format) *recordedSession {
	t.Helper()
	s := &recordedSession{agent: agent, format: format,
		dir: filepath.Join(projectRoot(t), "testdata", "e2e", "sessions", agent), bin: filepath.Join(binDir(t), bin)}
	if _, err := os.Stat(s.bin); err != nil {
		t.Skipf("%s CLI not installed at %s: run testdata/e2e/install-clis.sh first", bin, s.bin)
	}
	m, err := readManifest(filepath.Join(s.dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	s.manifest = m
	s.file = filepath.Join(s.dir, m.Files["session"])
	data, err := os.ReadFile(s.file)
	if err != nil {
		t.Fatal(err)
	}
	if s.traj, err = format.Decode(bytes.NewReader(data), trajectory.Options{}); err != nil {
		t.Fatal(err)
	}
	gz, err := os.ReadFile(filepath.Join(s.dir, m.Files["requests"]))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := readRequests(gz)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range reqs {
		if q.Kind == fakemodel.KindMain {
			s.requests = append(s.requests, q)
		}
	}
	return s
}

// captureUpstream keeps every body the bridge forwarded, in order.
type captureUpstream struct {
	bridge.Upstream
	mu     sync.Mutex
	bodies [][]byte
}

func (c *captureUpstream) Send(ctx context.Context, req *bridge.Request) (*http.Response, error) {
	c.mu.Lock()
	c.bodies = append(c.bodies, bytes.Clone(req.Body))
	c.mu.Unlock()
	return c.Upstream.Send(ctx, req)
}

func (c *captureUpstream) forwarded() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.bodies...)
}

// continueRun is one `pvisor replay` continuation of a recorded session, run
// in process so the test can watch the upstream.
type continueRun struct {
	agent, ws, state, out string
	capture               *captureUpstream
	res                   *result.Result
	took                  time.Duration
}

// continueAfter continues the session after step in a fresh copy of the
// recording's initial repo; edit, when set, changes the request first.
func (s *recordedSession) continueAfter(t *testing.T, step int, edit func(*replay.Request)) *continueRun {
	t.Helper()
	root := t.TempDir()
	cr := &continueRun{agent: s.agent, ws: filepath.Join(root, "ws"), state: filepath.Join(root, "state"),
		out: filepath.Join(root, "out"), capture: &captureUpstream{}}
	if err := os.MkdirAll(cr.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xzf", filepath.Join(s.dir, s.manifest.Files["initial_repo"]), "-C", cr.ws).CombinedOutput(); err != nil {
		t.Fatalf("unpack the initial repo: %v\n%s", err, out)
	}
	req := &replay.Request{Agent: s.agent, Trajectory: s.file, AfterStep: step, Workspace: cr.ws, RunID: "cont",
		StateRoot: cr.state, OutputRoot: cr.out, AgentEntrypoint: s.bin, Upstream: replay.UpstreamRecorded,
		IdleTimeout: time.Minute,
		Hooks: &replay.Hooks{Upstream: func(u bridge.Upstream) bridge.Upstream {
			cr.capture.Upstream = u
			return cr.capture
		}}}
	if edit != nil {
		edit(req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	start := time.Now()
	cr.res = replay.Run(ctx, req)
	cr.took = time.Since(start)
	return cr
}

// file reads a file of the run's output dir, failing with the run's logs.
func (cr *continueRun) file(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cr.out, "cont", rel))
	if err != nil {
		t.Fatalf("%v\n%s", err, cr.diagnose())
	}
	return data
}

// staged reads the copy of the session pvisor staged under the agent home.
func (cr *continueRun) staged(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cr.state, "cont", cr.agent+"-home", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// diagnose is the result line and the tail of each log, for a failure message.
func (cr *continueRun) diagnose() string {
	var b strings.Builder
	b.Write(cr.res.Line())
	for _, name := range []string{cr.agent + "-stdout.log", cr.agent + "-stderr.log", "bridge.log"} {
		data, _ := os.ReadFile(filepath.Join(cr.out, "cont", "logs", name))
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		b.WriteString("\n--- " + name + "\n" + string(data))
	}
	return b.String()
}

// continueEveryStep continues the session after each of its steps, each in
// its own subtest inside a loopback-only network namespace. Every
// continuation must finish the task cleanly, having played exactly the steps
// the recording had after the prefix, with its next action equal to the
// recorded one; check adds what is particular to the agent.
func (s *recordedSession) continueEveryStep(t *testing.T, check func(t *testing.T, cr *continueRun, prefixTurns int)) {
	for _, a := range s.traj.Steps() {
		step := a.Step
		t.Run(fmtStep(step), func(t *testing.T) {
			enterLoopbackNetns(t)
			cr := s.continueAfter(t, step, nil)
			res := cr.res
			if res.Failure != nil || res.AgentStatus != result.AgentCompleted || *res.Phase != result.PhaseContinued ||
				res.Quality != result.QualityVerified {
				t.Fatalf("continuation did not complete cleanly:\n%s", cr.diagnose())
			}
			prefixTurns := s.format.PrefixModelTurns(s.traj, step)
			if want := len(s.traj.Actions) - prefixTurns; res.ContinuedSteps != want {
				t.Errorf("continued_steps = %d, want %d", res.ContinuedSteps, want)
			}
			t.Logf("after step %d: continued %d steps in %.2fs (whole run)", step, res.ContinuedSteps, cr.took.Seconds())
			check(t, cr, prefixTurns)
			cr.checkNextActionAndFiles(t)
		})
	}
}

// checkNextActionAndFiles holds the continuation's first action to the
// recorded one and the workspace to the task's final files.
func (cr *continueRun) checkNextActionAndFiles(t *testing.T) {
	t.Helper()
	var cmpRes result.NextActionComparison
	if err := json.Unmarshal(cr.file(t, "next-action-comparison.json"), &cmpRes); err != nil {
		t.Fatal(err)
	}
	m := cmpRes.Metrics
	if !m.ToolCountEqual || !m.OrderedToolNamesEqual || !m.ToolArgumentsEqual {
		t.Errorf("next action tools differ: %+v", m)
	}
	checkText(t, "text", m.OriginalTextPresent, m.TextSimilarity, m.TextExact, m.TextComparisonStatus)
	checkText(t, "reasoning", m.OriginalReasoningPresent, m.ReasoningSimilarity, m.ReasoningExact, m.ReasoningComparisonStatus)
	for name, want := range finalFiles {
		if got, err := os.ReadFile(filepath.Join(cr.ws, name)); err != nil || string(got) != want {
			t.Errorf("after the continuation %s = %q (%v), want %q", name, got, err, want)
		}
	}
}

func checkText(t *testing.T, what string, present bool, sim *float64, exact *bool, status string) {
	t.Helper()
	switch {
	case !present && status != "not_applicable_both_empty":
		t.Errorf("%s: the recorded action has none, yet the comparison says %s", what, status)
	case present && (sim == nil || *sim != 1.0 || exact == nil || !*exact):
		t.Errorf("%s: similarity %v exact %v, want 1.0 and exact", what, deref(sim), exact)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func fmtStep(n int) string { return fmt.Sprintf("after-step-%d", n) }

func rawStrings(items []json.RawMessage) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

// tamperingEntrypoint writes an entrypoint named name that runs the shell
// command edit (which changes the staged session behind pvisor's back) before
// exec'ing the real CLI, except for the `--version` probe.
func (s *recordedSession) tamperingEntrypoint(t *testing.T, name, edit string) string {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), name)
	script := "#!/bin/sh\nif [ \"$1\" != \"--version\" ]; then\n  " + edit + "\nfi\nexec " + s.bin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// checkRefused holds a run whose session was tampered with to the bridge's
// refusal: a continuation_error (exit 40) naming mismatch, and nothing
// forwarded upstream.
func (cr *continueRun) checkRefused(t *testing.T, mismatch string) {
	t.Helper()
	res := cr.res
	if res.Failure == nil || res.Failure.Category != result.ContinuationError || result.ExitCode(res.Failure) != 40 ||
		res.AgentStatus != result.AgentFailed {
		t.Fatalf("want a continuation_error (exit 40):\n%s", cr.diagnose())
	}
	if !strings.Contains(res.Failure.Message, mismatch) {
		t.Errorf("the failure does not say what did not match: %s", res.Failure.Message)
	}
	if n := len(cr.capture.forwarded()); n != 0 {
		t.Errorf("the upstream received %d requests; a refused run must forward none", n)
	}
}

// checkRefusedFinally adds, for the agents whose result carries them, that
// the refusal is final and shows in the bridge's stats.
func (cr *continueRun) checkRefusedFinally(t *testing.T) {
	t.Helper()
	if cr.res.Retryable {
		t.Fatalf("want a continuation_error that is not retryable:\n%s", cr.diagnose())
	}
	st := cr.res.Metadata["continuation"].(map[string]any)["bridge"].(bridge.Stats)
	if st.Refused == 0 || st.Forwarded != 0 {
		t.Errorf("bridge stats %+v", st)
	}
}

// serveFakeModel starts a model service in the host's namespace, like a real
// one outside the sandbox: the bridge's upstream connections come from
// goroutines that are not locked into the test's namespace, so call it before
// enterLoopbackNetns. OPENAI_BASE_URL and OPENAI_API_KEY (key) point at it;
// the test stores the fake model to serve once it knows the workspace.
func serveFakeModel(t *testing.T, key string) *atomic.Pointer[fakemodel.Server] {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var fake atomic.Pointer[fakemodel.Server]
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fake.Load().ServeHTTP(w, r) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("OPENAI_BASE_URL", "http://"+ln.Addr().String()+"/v1")
	t.Setenv("OPENAI_API_KEY", key)
	return &fake
}
