//go:build e2e

package e2e

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay"
	copilotfmt "github.com/pvisor/pvisor/trajectory/copilot"
)

// Copilot joins the resume/fork matrix (TestResumeForkRealCLIs) from its
// own file, speaking Chat Completions to the bridge.
func init() {
	resumeAgents = append(resumeAgents, struct{ agent, upstream string }{"copilot", "openai-chat"})
}

// TestContinueCopilotEveryStep continues the recorded Copilot CLI session
// after every step with the real CLI, driven by the recorded upstream: the
// first request that reaches the upstream is, after its system message,
// exactly the rebuilt session's projection; the agent finishes the task; the
// continued events.jsonl holds no nonce; and its first action equals the
// recorded one (continueEveryStep).
func TestContinueCopilotEveryStep(t *testing.T) {
	eachRelease(t, "copilot", copilotfmt.New(), func(t *testing.T, s *recordedSession) {
		s.continueEveryStep(t, func(t *testing.T, cr *continueRun, _ int) {
			fwd := mainBodies(cr.capture.forwarded())
			if len(fwd) == 0 {
				t.Fatalf("nothing reached the upstream\n%s", cr.diagnose())
			}
			proj, err := copilotfmt.Project(bytes.NewReader(cr.staged(t, "pvisor-staged-session.jsonl")))
			if err != nil {
				t.Fatal(err)
			}
			first := chatMessages(fwd[0])
			if gjson.Get(first[0], "role").Str != "system" {
				t.Errorf("messages[0] is not the system message: %.200s", first[0])
			}
			if d := cmp.Diff(rawStrings(proj.Items), first[1:]); d != "" {
				t.Errorf("first forwarded request differs from the rebuilt prefix projection (-projection +forwarded):\n%s", d)
			}
			for i, b := range cr.capture.forwarded() {
				if bytes.Contains(b, []byte("__PVISOR_NATIVE_REPLAY_")) || bytes.Contains(b, []byte("__copilotMessageSource")) {
					t.Errorf("request %d: the nonce or Copilot's replay tag reached the upstream", i)
				}
			}
			if cont := cr.file(t, "native/continued-events.jsonl"); bytes.Contains(cont, []byte("__PVISOR_NATIVE_REPLAY_")) {
				t.Error("the continued session holds the nonce")
			}
		})
	})
}

// TestContinueCopilotRefusesTamperedSession changes a boundary observation
// in the staged events.jsonl behind pvisor's back: the bridge refuses the
// first request, nothing reaches the upstream, and the run fails (exit 40).
func TestContinueCopilotRefusesTamperedSession(t *testing.T) {
	s := loadRecordedSession(t, "copilot", copilotfmt.New())
	enterLoopbackNetns(t)
	edit := `for f in $(find "$HOME/.copilot/session-state" -name events.jsonl); do sed -i 's/def greet(name)/def grete(name)/g' "$f"; done`
	wrapper := s.tamperingEntrypoint(t, "copilot", edit)
	cr := s.continueAfter(t, 2, func(r *replay.Request) { r.AgentEntrypoint = wrapper })
	cr.checkRefused(t, "differs from message")
}
