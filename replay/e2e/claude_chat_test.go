//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay"
	"github.com/pvisor/pvisor/result"
)

// Claude Code continues on an OpenAI-compatible server: the bridge checks
// the Anthropic request, translates it to Chat Completions for the served
// model, and translates the streamed answer back. The server is the scripted
// model playing the recorded session's own replies.
func TestContinueClaudeOnChatUpstream(t *testing.T) {
	s := loadClaudeSession(t)
	const step, model = 2, "served-model-7"
	fake := serveFakeModel(t, "sk-pvisor-e2e-chat")

	enterLoopbackNetns(t)
	cr := s.continueAfter(t, step, func(r *replay.Request) {
		r.Upstream, r.UpstreamModel = "openai-chat", model
		r.Hooks = nil
		fake.Store(fakemodel.New(s.manifest.Script.Expand(map[string]string{"CWD": r.Workspace}), fakemodel.WithReplyOffset(0))) // the recorded next reply answers step N
	})
	res := cr.res
	if res.Failure != nil || res.AgentStatus != result.AgentCompleted || res.ContinuedSteps < 1 {
		t.Fatalf("want a completed continuation:\n%s", cr.diagnose())
	}
	reqs := fake.Load().Requests()
	if len(reqs) == 0 {
		t.Fatal("the chat server got no request")
	}
	first := reqs[0]
	if first.Path != "/v1/chat/completions" || gjson.GetBytes(first.Body, "model").Str != model {
		t.Errorf("first request %s model %q", first.Path, gjson.GetBytes(first.Body, "model").Str)
	}
	var toolMsgs int
	for _, m := range gjson.GetBytes(first.Body, "messages").Array() {
		if m.Get("role").Str == "tool" {
			toolMsgs++
		}
	}
	if toolMsgs == 0 {
		t.Errorf("the translated request carries no tool results: %s", first.Body)
	}
	var cmp struct {
		Metrics struct {
			OrderedToolNamesEqual bool `json:"ordered_tool_names_equal"`
		}
	}
	data, err := os.ReadFile(filepath.Join(cr.out, "cont", "next-action-comparison.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cmp); err != nil || !cmp.Metrics.OrderedToolNamesEqual {
		t.Errorf("next action differs from the recorded one: %s", data)
	}
}
