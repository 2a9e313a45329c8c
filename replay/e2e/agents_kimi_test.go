//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/bridge/fakemodel"
)

// Kimi Code joins the recorded agents from its own file, so the agents that
// other work adds beside it do not meet on one line.
func init() {
	agents = append(agents, kimi)
}

var kimi = &agentSpec{
	name:     "kimi",
	bin:      "kimi",
	protocol: fakemodel.Chat,
	script: fakemodel.Script{Replies: []fakemodel.Reply{
		{Thinking: "Start by seeing what is in the repository.", Text: "Let me look around the project first.",
			ToolCalls: []fakemodel.ToolCall{
				fn("Bash", `{"command":"ls -A"}`),
				fn("Glob", `{"pattern":"**/*.py"}`)}},
		{Text: "Reading the README and finding the functions.", ToolCalls: []fakemodel.ToolCall{
			fn("Read", `{"path":"README.md"}`),
			fn("Grep", `{"pattern":"def ","output_mode":"content","-n":true}`)}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("Write", `{"path":"NOTES.md","content":"# Notes\n\n- greet() lives in greeter/util.py\n"}`)}},
		{Text: "Fixing the typo.", ToolCalls: []fakemodel.ToolCall{
			fn("Edit", `{"path":"README.md","old_string":"greting","new_string":"greeting"}`)}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("Bash", `{"command":"git status --short"}`)}},
		{Text: "Added NOTES.md and fixed the README typo; git status shows both changes."},
	}},
	configure: func(t *testing.T, r *run) map[string]string {
		// Kimi reads its model from the environment alone: no config file,
		// no login; telemetry and the update check off.
		return map[string]string{
			"KIMI_CODE_HOME":           filepath.Join(r.home, ".kimi-code"),
			"KIMI_MODEL_NAME":          "fake-model",
			"KIMI_MODEL_API_KEY":       fakeKey,
			"KIMI_MODEL_PROVIDER_TYPE": "openai",
			"KIMI_MODEL_BASE_URL":      r.url + "/v1",
			"KIMI_DISABLE_TELEMETRY":   "1",
			"KIMI_CODE_NO_AUTO_UPDATE": "1",
		}
	},
	args: func(r *run) []string {
		return []string{"-p", taskPrompt, "--output-format", "stream-json"}
	},
	collect: func(t *testing.T, ctx context.Context, r *run) session {
		id := stdoutField(r.stdout, "type", "session.resume_hint", "session_id")
		if id == "" {
			t.Fatalf("no session.resume_hint in kimi's stream-json output\n%s", r.diagnose())
		}
		// The session is a directory; its model-visible record is the main
		// agent's wire.jsonl, which is what pvisor decodes.
		s := nativeFile(t, r, filepath.Join(r.home, ".kimi-code", "sessions"), "wire.jsonl")
		s.id = id
		return s
	},
}
