//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
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

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/replay/relocate"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
	codexfmt "github.com/pvisor/pvisor/trajectory/codex"
)

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

// codexSession is the recorded Codex session and what it takes to continue it.
type codexSession struct {
	dir, rollout string
	traj         *trajectory.Trajectory
	requests     []fakemodel.Request // the main requests the real CLI sent while recording
	codexBin     string
	manifest     manifest
}

func loadCodexSession(t *testing.T) *codexSession {
	t.Helper()
	s := &codexSession{dir: filepath.Join(projectRoot(t), "testdata", "e2e", "sessions", "codex")}
	s.codexBin = filepath.Join(binDir(t), "codex")
	if _, err := os.Stat(s.codexBin); err != nil {
		t.Skipf("codex CLI not installed at %s: run testdata/e2e/install-clis.sh first", s.codexBin)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &s.manifest); err != nil {
		t.Fatal(err)
	}
	s.rollout = filepath.Join(s.dir, s.manifest.Files["session"])
	f, err := os.Open(s.rollout)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s.traj, err = codexfmt.New().Decode(f, trajectory.Options{}); err != nil {
		t.Fatal(err)
	}
	zf, err := os.Open(filepath.Join(s.dir, s.manifest.Files["requests"]))
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	zr, err := gzip.NewReader(zf)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var q fakemodel.Request
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		if q.Kind == fakemodel.KindMain {
			s.requests = append(s.requests, q)
		}
	}
	return s
}

// continueRun is one `pvisor replay` continuation of the recorded session, run
// in process so the test can watch the upstream.
type continueRun struct {
	ws, state, out string
	capture        *captureUpstream
	res            *result.Result
	took           time.Duration
}

func (s *codexSession) continueAfter(t *testing.T, step int, edit func(*replay.Request)) *continueRun {
	t.Helper()
	root := t.TempDir()
	cr := &continueRun{ws: filepath.Join(root, "ws"), state: filepath.Join(root, "state"), out: filepath.Join(root, "out"),
		capture: &captureUpstream{}}
	if err := os.MkdirAll(cr.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xzf", filepath.Join(s.dir, s.manifest.Files["initial_repo"]), "-C", cr.ws).CombinedOutput(); err != nil {
		t.Fatalf("unpack the initial repo: %v\n%s", err, out)
	}
	req := &replay.Request{Agent: "codex", Trajectory: s.rollout, AfterStep: step, Workspace: cr.ws, RunID: "cont",
		StateRoot: cr.state, OutputRoot: cr.out, AgentEntrypoint: s.codexBin, Upstream: replay.UpstreamRecorded,
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

func (cr *continueRun) file(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cr.out, "cont", rel))
	if err != nil {
		t.Fatalf("%v\n%s", err, cr.diagnose())
	}
	return data
}

func (cr *continueRun) diagnose() string {
	var b strings.Builder
	b.Write(cr.res.Line())
	for _, name := range []string{"codex-stderr.log", "bridge.log"} {
		data, _ := os.ReadFile(filepath.Join(cr.out, "cont", "logs", name))
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		b.WriteString("\n--- " + name + "\n" + string(data))
	}
	return b.String()
}

// comparableItem is a request input item made comparable across runs: paths
// relocated, and the run-to-run fields of command outputs (chunk id, wall
// time) masked.
func comparableItem(t *testing.T, raw []byte, paths ...relocate.Paths) any {
	t.Helper()
	for _, p := range paths {
		var err error
		if raw, _, err = p.JSON(raw); err != nil {
			t.Fatal(err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if out, ok := m["output"].(string); ok {
		m["output"] = codexfmt.Normalize(out)
	}
	return m
}

func inputItems(body []byte) [][]byte {
	var out [][]byte
	for _, it := range gjson.GetBytes(body, "input").Array() {
		out = append(out, []byte(it.Raw))
	}
	return out
}

// TestContinueCodexEveryStep continues the recorded Codex session after every
// step with the real CLI, driven by the recorded upstream: the first request
// that reaches the upstream is exactly the rebuilt session's projection (and,
// paths and run-to-run fields aside, the request the CLI sent at that point
// when it recorded the session), the agent finishes the task, the continued
// rollout holds no nonce, and its first action equals the recorded one.
func TestContinueCodexEveryStep(t *testing.T) {
	s := loadCodexSession(t)
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
			prefixTurns := codexfmt.New().PrefixModelTurns(s.traj, step)
			if want := len(s.traj.Actions) - prefixTurns; res.ContinuedSteps != want {
				t.Errorf("continued_steps = %d, want %d", res.ContinuedSteps, want)
			}
			t.Logf("after step %d: continued %d steps in %.2fs (whole run)", step, res.ContinuedSteps, cr.took.Seconds())

			// The first forwarded request is the projection of the staged
			// rollout, byte for byte, after the instructions message.
			fwd := cr.capture.forwarded()
			if len(fwd) == 0 {
				t.Fatalf("nothing reached the upstream\n%s", cr.diagnose())
			}
			staged, err := os.ReadFile(filepath.Join(cr.state, "cont", "codex-home", "pvisor-staged-session.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			proj, err := codexfmt.Project(bytes.NewReader(staged))
			if err != nil {
				t.Fatal(err)
			}
			first := inputItems(fwd[0])
			if gjson.GetBytes(first[0], "role").Str != "developer" {
				t.Errorf("input[0] is not the instructions message: %.200s", first[0])
			}
			if d := cmp.Diff(rawStrings(proj.Items), bytesStrings(first[1:])); d != "" {
				t.Errorf("first forwarded request differs from the rebuilt prefix projection (-projection +forwarded):\n%s", d)
			}

			// Independently: it is the request the real CLI sent at this point
			// when it recorded the session, but for paths and run-to-run fields.
			orig := inputItems(s.requests[prefixTurns].Body)
			moves := []relocate.Paths{{From: s.manifest.RepoPath, To: cr.ws},
				{From: filepath.Join(s.manifest.HomePath, ".codex"), To: filepath.Join(cr.state, "cont", "codex-home")}}
			if len(orig) != len(first) {
				t.Fatalf("forwarded %d items, the recording's request had %d", len(first), len(orig))
			}
			for i := 1; i < len(orig); i++ {
				if d := cmp.Diff(comparableItem(t, orig[i], moves...), comparableItem(t, first[i])); d != "" {
					t.Errorf("item %d differs from the recorded request (-recorded +forwarded):\n%s", i, d)
				}
			}
			if strings.Contains(string(fwd[0]), "__PVISOR_NATIVE_REPLAY_") {
				t.Error("the nonce reached the upstream")
			}

			if cont := cr.file(t, "native/continued-session.jsonl"); bytes.Contains(cont, []byte("__PVISOR_NATIVE_REPLAY_")) {
				t.Error("native/continued-session.jsonl holds the nonce")
			}
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
		})
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

func bytesStrings(items [][]byte) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

// TestContinueCodexRefusesTamperedSession changes a boundary observation in the
// staged rollout behind pvisor's back (an entrypoint wrapper edits it before
// exec'ing codex): the bridge refuses the first request, nothing reaches the
// upstream, and the run fails with continuation_error (exit 40).
func TestContinueCodexRefusesTamperedSession(t *testing.T) {
	s := loadCodexSession(t)
	enterLoopbackNetns(t)
	wrapper := filepath.Join(t.TempDir(), "codex")
	script := `#!/bin/sh
if [ "$1" != "--version" ]; then
  for f in $(find "$CODEX_HOME/sessions" -name '*.jsonl'); do sed -i 's/def greet(name)/def grete(name)/g' "$f"; done
fi
exec ` + s.codexBin + ` "$@"
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cr := s.continueAfter(t, 2, func(r *replay.Request) { r.AgentEntrypoint = wrapper })
	res := cr.res
	if res.Failure == nil || res.Failure.Category != result.ContinuationError || result.ExitCode(res.Failure) != 40 ||
		res.AgentStatus != result.AgentFailed || res.Retryable {
		t.Fatalf("want a continuation_error (exit 40):\n%s", cr.diagnose())
	}
	if !strings.Contains(res.Failure.Message, "differs from item") {
		t.Errorf("the failure does not say what did not match: %s", res.Failure.Message)
	}
	if n := len(cr.capture.forwarded()); n != 0 {
		t.Errorf("the upstream received %d requests; a refused run must forward none", n)
	}
	st := res.Metadata["continuation"].(map[string]any)["bridge"].(bridge.Stats)
	if st.Refused == 0 || st.Forwarded != 0 {
		t.Errorf("bridge stats %+v", st)
	}
}

// TestContinueCodexPromptAndSecrets continues through a real HTTP upstream (the
// fake model serving the recording's own script) with a boundary prompt, an
// upstream key and a step budget: the prompt reaches the model right after
// O′N in every request, the run stops at the budget, and neither the prompt
// text nor the key is in any file the run left in its state or output dirs.
func TestContinueCodexPromptAndSecrets(t *testing.T) {
	s := loadCodexSession(t)
	const (
		prompt = "Before anything else, PVISOR-E2E-PROMPT-7c1f: re-read the notes."
		key    = "sk-pvisor-e2e-UPSTREAM-KEY-93b2"
		step   = 3
	)
	// The model service listens in the host's namespace, like a real one
	// outside the sandbox: the bridge's upstream connections come from
	// goroutines that are not locked into the test's namespace.
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

	enterLoopbackNetns(t)
	cr := s.continueAfter(t, step, func(r *replay.Request) {
		r.Upstream, r.BoundaryUserPrompt, r.MaxSteps = "openai-responses", prompt, 5
		fake.Store(fakemodel.New(s.manifest.Script.Expand(map[string]string{"CWD": r.Workspace})))
	})
	res := cr.res
	if res.Failure != nil || res.AgentStatus != result.AgentMaxSteps || res.ContinuedSteps != 2 {
		t.Fatalf("want max_steps after 2 live steps:\n%s", cr.diagnose())
	}
	bp := res.Metadata["boundary_user_prompt"].(map[string]any)
	if bp["injected"] != true || bp["injection_count"].(int) != 2 || bp["position"] != "after_boundary_observation" {
		t.Errorf("boundary_user_prompt metadata %v", bp)
	}
	at := len(inputItems(s.requests[codexfmt.New().PrefixModelTurns(s.traj, step)].Body)) // right after O′N
	reqs := fake.Load().Requests()
	if len(reqs) != 2 {
		t.Errorf("the model got %d requests, want 2 (the third is over the budget)", len(reqs))
	}
	for i, q := range reqs {
		for j, it := range gjson.GetBytes(q.Body, "input").Array() {
			if has := it.Get("content.0.text").Str == prompt; has != (j == at) {
				t.Errorf("request %d item %d: prompt %v, want it exactly at item %d", i, j, has, at)
			}
		}
	}
	for _, dir := range []string{cr.state, cr.out} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Error(err)
				return nil
			}
			for _, secret := range []string{prompt, key} {
				if bytes.Contains(data, []byte(secret)) {
					t.Errorf("%s holds %q", p, secret)
				}
			}
			return nil
		})
	}
}
