//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	claudefmt "github.com/pvisor/pvisor/trajectory/claude"
)

// claudeSession is the recorded Claude Code session and what it takes to
// continue it.
type claudeSession struct {
	dir, file string
	traj      *trajectory.Trajectory
	requests  []fakemodel.Request // the main requests the real CLI sent while recording
	bin       string
	manifest  manifest
}

func loadClaudeSession(t *testing.T) *claudeSession {
	t.Helper()
	s := &claudeSession{dir: filepath.Join(projectRoot(t), "testdata", "e2e", "sessions", "claude-code")}
	s.bin = filepath.Join(binDir(t), "claude")
	if _, err := os.Stat(s.bin); err != nil {
		t.Skipf("claude CLI not installed at %s: run testdata/e2e/install-clis.sh first", s.bin)
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
	if s.traj, err = claudefmt.New().Decode(bytes.NewReader(data), trajectory.Options{}); err != nil {
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

// claudeRun is one `pvisor replay` continuation of the recorded session.
type claudeRun struct {
	ws, state, out string
	capture        *captureUpstream
	res            *result.Result
	took           time.Duration
}

func (s *claudeSession) continueAfter(t *testing.T, step int, edit func(*replay.Request)) *claudeRun {
	t.Helper()
	root := t.TempDir()
	cr := &claudeRun{ws: filepath.Join(root, "ws"), state: filepath.Join(root, "state"), out: filepath.Join(root, "out"),
		capture: &captureUpstream{}}
	if err := os.MkdirAll(cr.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xzf", filepath.Join(s.dir, s.manifest.Files["initial_repo"]), "-C", cr.ws).CombinedOutput(); err != nil {
		t.Fatalf("unpack the initial repo: %v\n%s", err, out)
	}
	req := &replay.Request{Agent: "claude-code", Trajectory: s.file, AfterStep: step, Workspace: cr.ws, RunID: "cont",
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

func (cr *claudeRun) file(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cr.out, "cont", rel))
	if err != nil {
		t.Fatalf("%v\n%s", err, cr.diagnose())
	}
	return data
}

func (cr *claudeRun) diagnose() string {
	var b strings.Builder
	b.Write(cr.res.Line())
	for _, name := range []string{"claude-code-stdout.log", "claude-code-stderr.log", "bridge.log"} {
		data, _ := os.ReadFile(filepath.Join(cr.out, "cont", "logs", name))
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		b.WriteString("\n--- " + name + "\n" + string(data))
	}
	return b.String()
}

// messages returns the canonical messages of a request body (the context
// reminder the CLI prepends to the first message removed) and the raw ones.
func messages(t *testing.T, body []byte) (canon, raw []string) {
	t.Helper()
	for i, m := range gjson.GetBytes(body, "messages").Array() {
		r := m.Raw
		raw = append(raw, r)
		if c := m.Get("content").Array(); i == 0 && len(c) > 1 && claudefmt.IsContextReminder(c[0].Get("text").Str) {
			parts := make([]string, len(c)-1)
			for j, b := range c[1:] {
				parts[j] = b.Raw
			}
			r = `{"role":"user","content":[` + strings.Join(parts, ",") + `]}`
		}
		cm, err := claudefmt.Canonical([]byte(r))
		if err != nil {
			t.Fatal(err)
		}
		canon = append(canon, string(cm))
	}
	return canon, raw
}

// TestContinueClaudeEveryStep continues the recorded Claude Code session
// after every step with the real CLI, driven by the recorded upstream: the
// first request that reaches the upstream is exactly the rebuilt session's
// projection (and, paths aside, byte for byte the messages the CLI sent at
// that point when it recorded the session, cache breakpoint included), the
// agent finishes the task, the continued session holds no envelope record,
// and its first action equals the recorded one.
func TestContinueClaudeEveryStep(t *testing.T) {
	s := loadClaudeSession(t)
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
			prefixTurns := claudefmt.New().PrefixModelTurns(s.traj, step)
			if want := len(s.traj.Actions) - prefixTurns; res.ContinuedSteps != want {
				t.Errorf("continued_steps = %d, want %d", res.ContinuedSteps, want)
			}
			t.Logf("after step %d: continued %d steps in %.2fs (whole run)", step, res.ContinuedSteps, cr.took.Seconds())

			fwd := cr.capture.forwarded()
			if len(fwd) == 0 {
				t.Fatalf("nothing reached the upstream\n%s", cr.diagnose())
			}
			staged, err := os.ReadFile(filepath.Join(cr.state, "cont", "claude-code-home", "pvisor-staged-session.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			proj, err := claudefmt.Project(bytes.NewReader(staged))
			if err != nil {
				t.Fatal(err)
			}
			first, firstRaw := messages(t, fwd[0])
			if d := cmp.Diff(rawStrings(proj.Messages), first); d != "" {
				t.Errorf("first forwarded request differs from the rebuilt session's projection (-projection +forwarded):\n%s", d)
			}

			// Independently: byte for byte the messages the real CLI sent at
			// this point while recording, but for the workspace path (the
			// context reminder's date may differ).
			_, orig := messages(t, s.requests[prefixTurns].Body)
			if len(orig) != len(firstRaw) {
				t.Fatalf("forwarded %d messages, the recording's request had %d", len(firstRaw), len(orig))
			}
			move := relocate.Paths{From: s.manifest.RepoPath, To: cr.ws}
			for i := 1; i < len(orig); i++ {
				want, _, err := move.JSON([]byte(orig[i]))
				if err != nil {
					t.Fatal(err)
				}
				// A regenerated observation may differ from the recorded one
				// (the projection check above holds it to the rebuilt
				// session); every other byte must not.
				w := withObservations(t, string(want), firstRaw[i])
				if w != firstRaw[i] {
					t.Errorf("message %d differs from the recorded request:\nrecorded  %s\nforwarded %s", i, w, firstRaw[i])
				}
			}
			for i, body := range fwd {
				for _, leak := range []string{"__PVISOR_NATIVE_REPLAY_", "__PVISOR_RESUME_MARKER_", "No response requested."} {
					if bytes.Contains(body, []byte(leak)) {
						t.Errorf("forwarded request %d holds %q", i+1, leak)
					}
				}
			}

			cont := cr.file(t, "native/continued-session.jsonl")
			for _, leak := range []string{"__PVISOR_NATIVE_REPLAY_", "__PVISOR_RESUME_MARKER_", "No response requested."} {
				if bytes.Contains(cont, []byte(leak)) {
					t.Errorf("native/continued-session.jsonl holds %q", leak)
				}
			}
			ct, err := claudefmt.New().Decode(bytes.NewReader(cont), trajectory.Options{})
			if err != nil {
				t.Fatalf("the continued session does not decode: %v", err)
			}
			if len(ct.Actions) != len(s.traj.Actions) {
				t.Errorf("the continued session has %d responses on its chain, the recording %d", len(ct.Actions), len(s.traj.Actions))
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

// TestContinueClaudeRefusesTamperedSession changes a boundary observation in
// the staged session behind pvisor's back (an entrypoint wrapper edits it
// before exec'ing claude): the bridge refuses the first request, nothing
// reaches the upstream, and the run fails with continuation_error (exit 40).
func TestContinueClaudeRefusesTamperedSession(t *testing.T) {
	s := loadClaudeSession(t)
	enterLoopbackNetns(t)
	wrapper := filepath.Join(t.TempDir(), "claude")
	script := `#!/bin/sh
if [ "$1" != "--version" ]; then
  for f in $(find "$CLAUDE_CONFIG_DIR/projects" -name '*.jsonl'); do sed -i 's/def greet(name)/def grete(name)/g' "$f"; done
fi
exec ` + s.bin + ` "$@"
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
	if !strings.Contains(res.Failure.Message, "differs from message") {
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

// withObservations returns the recorded message with the content of each
// tool_result replaced by the bytes the forwarded message has for the same
// tool_use id, logging which observations were regenerated differently.
func withObservations(t *testing.T, recorded, forwarded string) string {
	t.Helper()
	fresh := map[string]string{}
	for _, b := range gjson.Get(forwarded, "content").Array() {
		if b.Get("type").Str == "tool_result" {
			fresh[b.Get("tool_use_id").Str] = b.Get("content").Raw
		}
	}
	out := recorded
	for _, b := range gjson.Get(recorded, "content").Array() {
		id := b.Get("tool_use_id").Str
		f, ok := fresh[id]
		if b.Get("type").Str != "tool_result" || !ok || f == b.Get("content").Raw {
			continue
		}
		t.Logf("observation of %s was regenerated differently: recorded %s, replayed %s", id, b.Get("content").Raw, f)
		nb := strings.Replace(b.Raw, `"content":`+b.Get("content").Raw, `"content":`+f, 1)
		out = strings.Replace(out, b.Raw, nb, 1)
	}
	return out
}
