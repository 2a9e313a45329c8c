//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
	"github.com/pvisor/pvisor/trajectory"
	ocfmt "github.com/pvisor/pvisor/trajectory/opencode"
	pifmt "github.com/pvisor/pvisor/trajectory/pi"
)

// chatSession is a recorded OpenCode or Pi session, with where its agent
// stages it and how to project the staged copy.
type chatSession struct {
	*recordedSession
	format  trajectory.Format
	staged  string // the staged copy under the agent home
	project func(data []byte) ([]json.RawMessage, error)
}

func loadChatSession(t *testing.T, agent string) *chatSession {
	t.Helper()
	s := chatFor(agent)
	s.recordedSession = loadRecordedSession(t, agent, s.format)
	return s
}

// chatFor is agent's chatSession without the recording.
func chatFor(agent string) *chatSession {
	s := &chatSession{}
	var format trajectory.Format
	switch agent {
	case "opencode":
		format, s.staged = ocfmt.New(), "pvisor-staged-session.json"
		s.project = func(b []byte) ([]json.RawMessage, error) {
			p, err := ocfmt.Project(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			return p.Items, nil
		}
	case "pi":
		format, s.staged = pifmt.New(), "pvisor-staged-session.jsonl"
		s.project = func(b []byte) ([]json.RawMessage, error) {
			p, err := pifmt.Project(bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			return p.Items, nil
		}
	}
	s.format = format
	return s
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
			s := chatFor(agent)
			eachRelease(t, agent, s.format, func(t *testing.T, rs *recordedSession) {
				s := &chatSession{recordedSession: rs, format: s.format, staged: s.staged, project: s.project}
				s.continueEveryStep(t, func(t *testing.T, cr *continueRun, _ int) {
					fwd := mainBodies(cr.capture.forwarded())
					if len(fwd) == 0 {
						t.Fatalf("nothing reached the upstream\n%s", cr.diagnose())
					}
					proj, err := s.project(cr.staged(t, s.staged))
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
					if agent == "opencode" {
						// pvisor wrote and read OpenCode's database itself.
						for _, k := range []string{"staging", "collecting"} {
							if m, _ := cr.res.Metadata["continuation"].(map[string]any)[k].(map[string]any); m["method"] != "direct" {
								t.Errorf("continuation.%s = %v, want the direct database path", k, m)
							}
						}
					}
					name := "continued-trajectory.json"
					if agent == "pi" {
						name = "continued-events.jsonl"
					}
					if cont := cr.file(t, "native/"+name); bytes.Contains(cont, []byte("__PVISOR_NATIVE_REPLAY_")) {
						t.Error("the continued session holds the nonce")
					}
				})
			})
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
			fake := serveFakeModel(t, "sk-pvisor-e2e-loop")
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
				t.Fatalf("want max_steps:\n%s", cr.diagnose())
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
			// OpenCode reads the database pvisor wrote (or, on the CLI
			// route, imports the staged export): edit both, with a
			// same-length byte replacement, which keeps SQLite's pages
			// valid. Pi reads the session file itself.
			edit := `for f in $(find "$HOME" -name 'pvisor-staged-session.json' -o -name 'opencode.db'); do perl -0777 -pi -e 's/def greet\(name\)/def grete(name)/g' "$f"; done`
			if agent == "pi" {
				edit = `for f in $(find "$HOME/.pi/agent/sessions" -name '*.jsonl'); do sed -i 's/def greet(name)/def grete(name)/g' "$f"; done`
			}
			wrapper := s.tamperingEntrypoint(t, agent, edit)
			cr := s.continueAfter(t, 2, func(r *replay.Request) { r.AgentEntrypoint = wrapper })
			cr.checkRefused(t, "differs from message")
		})
	}
}
