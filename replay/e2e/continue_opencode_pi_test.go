//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge"
	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
	ocfmt "github.com/pvisor/pvisor/trajectory/opencode"
	pifmt "github.com/pvisor/pvisor/trajectory/pi"
)

// chatSession is a recorded OpenCode or Pi session and what it takes to
// continue it.
type chatSession struct {
	agent, dir, file, bin string
	format                trajectory.Format
	traj                  *trajectory.Trajectory
	manifest              manifest
	staged                string // the staged copy under the agent home
	project               func(data []byte) ([]json.RawMessage, error)
}

func loadChatSession(t *testing.T, agent string) *chatSession {
	t.Helper()
	s := &chatSession{agent: agent, dir: filepath.Join(projectRoot(t), "testdata", "e2e", "sessions", agent)}
	s.bin = filepath.Join(binDir(t), agent)
	if _, err := os.Stat(s.bin); err != nil {
		t.Skipf("%s CLI not installed at %s: run testdata/e2e/install-clis.sh first", agent, s.bin)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &s.manifest); err != nil {
		t.Fatal(err)
	}
	s.file = filepath.Join(s.dir, s.manifest.Files["session"])
	switch agent {
	case "opencode":
		s.format, s.staged = ocfmt.New(), "pvisor-staged-session.json"
		s.project = func(b []byte) ([]json.RawMessage, error) {
			p, err := ocfmt.Project(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			return p.Items, nil
		}
	case "pi":
		s.format, s.staged = pifmt.New(), "pvisor-staged-session.jsonl"
		s.project = func(b []byte) ([]json.RawMessage, error) {
			p, err := pifmt.Project(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			return p.Items, nil
		}
	}
	f, err := os.Open(s.file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s.traj, err = s.format.Decode(f, trajectory.Options{}); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *chatSession) continueAfter(t *testing.T, step int, edit func(*replay.Request)) *continueRun {
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

func (s *chatSession) diagnose(cr *continueRun) string {
	var b strings.Builder
	b.Write(cr.res.Line())
	for _, name := range []string{s.agent + "-stdout.log", s.agent + "-stderr.log", "bridge.log"} {
		data, _ := os.ReadFile(filepath.Join(cr.out, "cont", "logs", name))
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		b.WriteString("\n--- " + name + "\n" + string(data))
	}
	return b.String()
}

func chatMessages(body []byte) []string {
	var out []string
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		out = append(out, m.Raw)
	}
	return out
}

// mainBodies are the forwarded requests that carry tools (side calls such as
// OpenCode's title generation do not).
func mainBodies(fwd [][]byte) [][]byte {
	var out [][]byte
	for _, b := range fwd {
		if len(gjson.GetBytes(b, "tools").Array()) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// TestContinueOpenCodePiEveryStep continues the recorded OpenCode and Pi
// sessions after every step with the real CLIs, driven by the recorded
// upstream: the first request that reaches the upstream is, after its system
// message, exactly the rebuilt session's projection; the agent finishes the
// task; the continued session holds no nonce; and its first action equals
// the recorded one.
func TestContinueOpenCodePiEveryStep(t *testing.T) {
	for _, agent := range []string{"opencode", "pi"} {
		t.Run(agent, func(t *testing.T) {
			s := loadChatSession(t, agent)
			for _, a := range s.traj.Steps() {
				step := a.Step
				t.Run(fmtStep(step), func(t *testing.T) {
					enterLoopbackNetns(t)
					cr := s.continueAfter(t, step, nil)
					res := cr.res
					if res.Failure != nil || res.AgentStatus != result.AgentCompleted || *res.Phase != result.PhaseContinued ||
						res.Quality != result.QualityVerified {
						t.Fatalf("continuation did not complete cleanly:\n%s", s.diagnose(cr))
					}
					prefixTurns := s.format.PrefixModelTurns(s.traj, step)
					if want := len(s.traj.Actions) - prefixTurns; res.ContinuedSteps != want {
						t.Errorf("continued_steps = %d, want %d", res.ContinuedSteps, want)
					}
					t.Logf("after step %d: continued %d steps in %.2fs (whole run)", step, res.ContinuedSteps, cr.took.Seconds())

					fwd := mainBodies(cr.capture.forwarded())
					if len(fwd) == 0 {
						t.Fatalf("nothing reached the upstream\n%s", s.diagnose(cr))
					}
					staged, err := os.ReadFile(filepath.Join(cr.state, "cont", agent+"-home", s.staged))
					if err != nil {
						t.Fatal(err)
					}
					proj, err := s.project(staged)
					if err != nil {
						t.Fatal(err)
					}
					first := chatMessages(fwd[0])
					if gjson.Get(first[0], "role").Str != "system" {
						t.Errorf("messages[0] is not the system message: %.200s", first[0])
					}
					if d := cmp.Diff(rawStrings(proj), first[1:]); d != "" {
						t.Errorf("first forwarded request differs from the rebuilt prefix projection (-projection +forwarded):\n%s", d)
					}
					for i, b := range cr.capture.forwarded() {
						if bytes.Contains(b, []byte("__PVISOR_NATIVE_REPLAY_")) {
							t.Errorf("request %d: the nonce reached the upstream", i)
						}
					}
					ext := "json"
					if agent == "pi" {
						ext = "jsonl"
					}
					if cont := cr.file(t, "native/continued-session."+ext); bytes.Contains(cont, []byte("__PVISOR_NATIVE_REPLAY_")) {
						t.Error("the continued session holds the nonce")
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
		})
	}
}

// TestContinueOpenCodePiStepBudget drives the CLI with a model that calls a
// tool forever (the fake model, outside the sandbox, serving one harmless
// call per turn): the step watchdog stops it at exactly the budget, with
// agent_status max_steps.
func TestContinueOpenCodePiStepBudget(t *testing.T) {
	const step, budgetLive = 2, 3
	for _, agent := range []string{"opencode", "pi"} {
		t.Run(agent, func(t *testing.T) {
			s := loadChatSession(t, agent)
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
			t.Setenv("OPENAI_API_KEY", "sk-pvisor-e2e-loop")
			var forever fakemodel.Script
			for i := 0; i < 200; i++ {
				forever.Replies = append(forever.Replies, fakemodel.Reply{Text: "Again.",
					ToolCalls: []fakemodel.ToolCall{{Name: "bash", Arguments: json.RawMessage(`{"command":"true","description":"noop"}`)}}})
			}
			prefixTurns := s.format.PrefixModelTurns(s.traj, step)
			fake.Store(fakemodel.New(forever, fakemodel.WithReplyOffset(prefixTurns)))

			enterLoopbackNetns(t)
			cr := s.continueAfter(t, step, func(r *replay.Request) {
				r.Upstream, r.MaxSteps = "openai-chat", prefixTurns+budgetLive
			})
			res := cr.res
			if res.Failure != nil || res.AgentStatus != result.AgentMaxSteps {
				t.Fatalf("want max_steps:\n%s", s.diagnose(cr))
			}
			if n := len(mainBodies(cr.capture.forwarded())); n != budgetLive {
				t.Errorf("the model got %d requests, want %d (the next is over the budget)", n, budgetLive)
			}
			if res.ContinuedSteps != budgetLive {
				t.Errorf("continued_steps = %d, want %d", res.ContinuedSteps, budgetLive)
			}
			if agent == "opencode" {
				sb, ok := res.Metadata["opencode_step_budget"].(map[string]any)
				if !ok || sb["enforced_by"] == nil || sb["reason"] == nil {
					t.Errorf("metadata opencode_step_budget = %v", res.Metadata["opencode_step_budget"])
				}
			}
			t.Logf("stopped after %d live steps in %.2fs", res.ContinuedSteps, cr.took.Seconds())
		})
	}
}

// TestContinueOpenCodePiRefusesTamperedSession changes a boundary
// observation in the staged session behind pvisor's back (an entrypoint
// wrapper edits it before exec'ing the CLI): the bridge refuses the first
// request, nothing reaches the upstream, and the run fails with exit 40.
func TestContinueOpenCodePiRefusesTamperedSession(t *testing.T) {
	for _, agent := range []string{"opencode", "pi"} {
		t.Run(agent, func(t *testing.T) {
			s := loadChatSession(t, agent)
			enterLoopbackNetns(t)
			wrapper := filepath.Join(t.TempDir(), agent)
			// OpenCode imports the staged export before run: edit it there.
			// Pi reads the session file itself.
			edit := `for f in $(find "$HOME" -name 'pvisor-staged-session.json'); do sed -i 's/def greet(name)/def grete(name)/g' "$f"; done`
			if agent == "pi" {
				edit = `for f in $(find "$HOME/.pi/agent/sessions" -name '*.jsonl'); do sed -i 's/def greet(name)/def grete(name)/g' "$f"; done`
			}
			script := "#!/bin/sh\nif [ \"$1\" != \"--version\" ]; then\n  " + edit + "\nfi\nexec " + s.bin + " \"$@\"\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cr := s.continueAfter(t, 2, func(r *replay.Request) { r.AgentEntrypoint = wrapper })
			res := cr.res
			if res.Failure == nil || res.Failure.Category != result.ContinuationError || result.ExitCode(res.Failure) != 40 ||
				res.AgentStatus != result.AgentFailed {
				t.Fatalf("want a continuation_error (exit 40):\n%s", s.diagnose(cr))
			}
			if !strings.Contains(res.Failure.Message, "differs from message") {
				t.Errorf("the failure does not say what did not match: %s", res.Failure.Message)
			}
			if n := len(cr.capture.forwarded()); n != 0 {
				t.Errorf("the upstream received %d requests; a refused run must forward none", n)
			}
		})
	}
}
