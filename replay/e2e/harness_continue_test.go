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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/tested"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
)

// recordedSession is a recorded session (testdata/e2e/sessions/<agent>@<version>)
// and the CLI release that continues it.
type recordedSession struct {
	agent, dir, file, bin string
	version               string // of the CLI that recorded the session
	release               string // of the CLI that continues it (bin)
	format                trajectory.Format
	traj                  *trajectory.Trajectory
	requests              []fakemodel.Request // the main requests the real CLI sent while recording
	manifest              manifest
}

// sameRelease reports whether the session is continued by the release that
// recorded it: only then must the requests equal the recorded ones byte for
// byte (another release renders runtime items its own way).
func (s *recordedSession) sameRelease() bool { return s.version == s.release }

// newestRelease reports whether the session is continued by the newest
// tested release of its agent: the one users install today.
func (s *recordedSession) newestRelease() bool {
	rels := tested.Of(s.agent)
	return len(rels) > 0 && rels[len(rels)-1].Version == s.release
}

// recordingDirs are the recorded sessions of agent, one per CLI release that
// recorded one, oldest release first.
func recordingDirs(t testing.TB, agent string) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(projectRoot(t), "testdata", "e2e", "sessions", agent+"@*"))
	if len(dirs) == 0 {
		t.Fatalf("no recorded %s session under testdata/e2e/sessions", agent)
	}
	slices.SortFunc(dirs, func(a, b string) int {
		return tested.MustSemver(strings.SplitN(filepath.Base(a), "@", 2)[1]).Compare(tested.MustSemver(strings.SplitN(filepath.Base(b), "@", 2)[1]))
	})
	return dirs
}

// loadRecordedSession is the newest tested release of agent continuing the
// session that release recorded (or, when it recorded none, the oldest
// recording). It skips the test when the release is not installed.
func loadRecordedSession(t testing.TB, agent string, format trajectory.Format) *recordedSession {
	t.Helper()
	rels := tested.Of(agent)
	newest := rels[len(rels)-1]
	dirs := recordingDirs(t, agent)
	dir := dirs[0]
	for _, d := range dirs {
		if strings.HasSuffix(d, "@"+newest.Version) {
			dir = d
		}
	}
	return loadRecording(t, dir, newest, format)
}

// eachRelease runs f for every recorded session of agent continued by every
// tested release of agent (recordings × releases), each in its own subtest
// "<recording>/by-<release>".
func eachRelease(t *testing.T, agent string, format trajectory.Format, f func(t *testing.T, s *recordedSession)) {
	for _, dir := range recordingDirs(t, agent) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			for _, rel := range tested.Of(agent) {
				t.Run("by-"+rel.Version, func(t *testing.T) { f(t, loadRecording(t, dir, rel, format)) })
			}
		})
	}
}

// releaseBin is where install-clis.sh puts a release's CLI. A release that
// is not installed skips the test, or fails it under CI, where the install
// script has run.
func releaseBin(t testing.TB, rel tested.Release) string {
	t.Helper()
	bin := rel.Path(e2eDir(t))
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s %s is not installed at %s: install-clis.sh should have installed it", rel.Agent, rel.Version, bin)
		}
		t.Skipf("%s %s not installed at %s: run testdata/e2e/install-clis.sh first", rel.Agent, rel.Version, bin)
	}
	return bin
}

func loadRecording(t testing.TB, dir string, rel tested.Release, format trajectory.Format) *recordedSession {
	t.Helper()
	s := &recordedSession{agent: rel.Agent, format: format, dir: dir, bin: releaseBin(t, rel), release: rel.Version}
	m, err := readManifest(filepath.Join(s.dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	s.manifest = m
	if s.version = versionRe.FindString(m.CLIVersion); s.version == "" {
		t.Fatalf("%s: manifest cli_version %q names no version", dir, m.CLIVersion)
	}
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
// recorded one; check adds what is particular to the agent. The steps run in
// parallel (go test -parallel, GOMAXPROCS by default): each has its own
// directories, bridge and namespace, and the CLIs spend much of a run
// starting up.
//
// Every step runs where a boundary bug would show: the recording continued
// by its own release and by the newest tested one. A pairing across other
// releases runs the first and the last step, which is where a release that
// renders the session its own way differs (the whole cross product, every
// step by every release, was a quarter of CI's end-to-end time).
func (s *recordedSession) continueEveryStep(t *testing.T, check func(t *testing.T, cr *continueRun, prefixTurns int)) {
	steps := s.traj.Steps()
	if !s.sameRelease() && !s.newestRelease() && len(steps) > 2 {
		t.Logf("%s recorded by %s, continued by %s: first and last step only (every step runs with the recording's own and the newest release)", s.agent, s.version, s.release)
		steps = append(steps[:1:1], steps[len(steps)-1])
	}
	for _, a := range steps {
		step := a.Step
		t.Run(fmtStep(step), func(t *testing.T) {
			t.Parallel()
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
	// The CLI's own node_modules/.bin stays first on PATH, as pvisor puts
	// it for the CLI itself (a Node of its own: Pi ≥ 0.83 needs Node 22).
	script := "#!/bin/sh\nif [ \"$1\" != \"--version\" ]; then\n  " + edit + "\nfi\nPATH=" + filepath.Dir(s.bin) + ":$PATH exec " + s.bin + " \"$@\"\n"
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
