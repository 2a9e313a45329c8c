//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pvisor/pvisor/bridge/fakemodel"
)

// Copilot joins the recorded agents from its own file, so the list in
// agents_test.go stays the one line other agents touch.
func init() { agents = append(agents, copilot) }

var copilot = &agentSpec{
	name:     "copilot",
	bin:      "copilot",
	protocol: fakemodel.Chat,
	script: fakemodel.Script{Replies: []fakemodel.Reply{
		{Text: "Let me look around the project first.", ToolCalls: []fakemodel.ToolCall{
			fn("glob", `{"pattern":"**/*.py"}`),
			fn("bash", `{"command":"ls -A","description":"List the project root"}`)}},
		{Text: "Reading the README and finding the functions.", ToolCalls: []fakemodel.ToolCall{
			fn("view", `{"path":"{CWD}/README.md"}`),
			fn("grep", `{"pattern":"def ","path":"{CWD}","output_mode":"content","-n":true}`)}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("create", `{"path":"{CWD}/NOTES.md","file_text":"# Notes\n\n- greet() lives in greeter/util.py\n"}`)}},
		{Text: "Fixing the typo.", ToolCalls: []fakemodel.ToolCall{
			fn("edit", `{"path":"{CWD}/README.md","old_str":"greting","new_str":"greeting"}`)}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("bash", `{"command":"git status --short","description":"Show working tree status"}`)}},
		{Text: "Added NOTES.md and fixed the README typo; git status shows both changes."},
	}},
	configure: func(t *testing.T, r *run) map[string]string {
		// Offline by environment alone (copilot help environment): no login,
		// no update check, no telemetry.
		return map[string]string{
			"COPILOT_OFFLINE":           "true",
			"COPILOT_PROVIDER_BASE_URL": r.url + "/v1",
			"COPILOT_PROVIDER_TYPE":     "openai",
			"COPILOT_PROVIDER_WIRE_API": "completions",
			"COPILOT_PROVIDER_API_KEY":  fakeKey,
			"COPILOT_MODEL":             "fake-model",
			"COPILOT_AUTO_UPDATE":       "false",
			"COPILOT_HOME":              filepath.Join(r.home, ".copilot"),
		}
	},
	args: func(r *run) []string {
		return []string{"-p", taskPrompt, "--allow-all-tools", "--output-format", "json",
			"--no-auto-update", "--disable-client-telemetry"}
	},
	collect: func(t *testing.T, ctx context.Context, r *run) session {
		id := stdoutField(r.stdout, "type", "result", "sessionId")
		if id == "" {
			t.Fatalf("no result sessionId in copilot's --output-format json output\n%s", r.diagnose())
		}
		dir := filepath.Join(r.home, ".copilot", "session-state", id)
		s := nativeFile(t, r, dir, "events.jsonl")
		s.id = id
		ws, err := os.ReadFile(filepath.Join(dir, "workspace.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		s.beside = map[string][]byte{"workspace.yaml": ws}
		return s
	},
}
