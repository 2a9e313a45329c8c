//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/bridge/fakemodel"
	"github.com/pvisor/pvisor/replay/tested"
)

// agentSpec is everything agent-specific about one recording; the releases
// recorded are those of replay/tested/versions.txt.
type agentSpec struct {
	name     string // directory under testdata/e2e/sessions
	bin      string
	protocol fakemodel.Protocol
	script   fakemodel.Script // "{CWD}" is the repo path
	// configure writes the CLI's config files under r.home and returns its env.
	configure func(t *testing.T, r *run) map[string]string
	args      func(r *run) []string
	// collect finds the native session the run wrote.
	collect func(t *testing.T, ctx context.Context, r *run) session
}

type session struct {
	id         string
	nativePath string // relative to r.home, or a description for non-file stores
	name       string // file name in the recording
	data       []byte
	// beside are the other files of a session that is a directory (Copilot's
	// workspace.yaml), by name; recorded next to the session file.
	beside map[string][]byte
}

var agents = []*agentSpec{claudeCode, codex, opencode, pi}

func fn(name string, args string) fakemodel.ToolCall {
	return fakemodel.ToolCall{Name: name, Arguments: []byte(args)}
}

// stdoutField returns the first value at path among stdout's JSON lines that match
// the filter path/value pair.
func stdoutField(stdout []byte, filterPath, filterValue, path string) string {
	for _, line := range bytes.Split(stdout, []byte("\n")) {
		if !gjson.ValidBytes(line) {
			continue
		}
		v := gjson.ParseBytes(line)
		if v.Get(filterPath).String() == filterValue {
			if got := v.Get(path).String(); got != "" {
				return got
			}
		}
	}
	return ""
}

// nativeFile reads the one file named like pattern under dir.
func nativeFile(t *testing.T, r *run, dir, pattern string) session {
	t.Helper()
	files, err := findFiles(dir, pattern)
	if err != nil || len(files) != 1 {
		t.Fatalf("want exactly one session file %s under %s, found %v (%v)\n%s", pattern, dir, files, err, r.diagnose())
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jsonLines(data); err != nil {
		t.Fatalf("session %s is not JSONL: %v", files[0], err)
	}
	rel, _ := filepath.Rel(r.home, files[0])
	return session{nativePath: rel, name: filepath.Base(files[0]), data: data}
}

// ---------------------------------------------------------------- Claude Code

var claudeCode = &agentSpec{
	name:     "claude-code",
	bin:      "claude",
	protocol: fakemodel.Anthropic,
	script: fakemodel.Script{Replies: []fakemodel.Reply{
		{Thinking: "Start by seeing what is in the repository.", Text: "Let me look around the project first.",
			ToolCalls: []fakemodel.ToolCall{
				fn("Glob", `{"pattern":"**/*.py"}`),
				fn("Bash", `{"command":"ls -A","description":"List the project root"}`)}},
		{Text: "Reading the README and finding the functions.", ToolCalls: []fakemodel.ToolCall{
			fn("Read", `{"file_path":"{CWD}/README.md"}`),
			fn("Grep", `{"pattern":"def ","path":"{CWD}","output_mode":"content","-n":true}`)}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("Write", `{"file_path":"{CWD}/NOTES.md","content":"# Notes\n\n- greet() lives in greeter/util.py\n"}`)}},
		{Text: "Fixing the typo.", ToolCalls: []fakemodel.ToolCall{
			fn("Edit", `{"file_path":"{CWD}/README.md","old_string":"greting","new_string":"greeting"}`)}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("Bash", `{"command":"git status --short","description":"Show working tree status"}`)}},
		{Text: "Added NOTES.md and fixed the README typo; git status shows both changes."},
	}},
	configure: func(t *testing.T, r *run) map[string]string {
		return map[string]string{
			"ANTHROPIC_BASE_URL":                       r.url,
			"ANTHROPIC_API_KEY":                        fakeKey,
			"CLAUDE_CONFIG_DIR":                        filepath.Join(r.home, ".claude"),
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"DISABLE_AUTOUPDATER":                      "1",
			"DISABLE_TELEMETRY":                        "1",
			"DISABLE_ERROR_REPORTING":                  "1",
			// Root may use --dangerously-skip-permissions only in a declared sandbox.
			"IS_SANDBOX": "1",
		}
	},
	args: func(r *run) []string {
		// Claude Code 2.1.197 drops Glob and Grep (the Bash tool gets embedded
		// find/grep instead) unless --tools or --allowedTools names them.
		return []string{"-p", taskPrompt, "--output-format", "stream-json", "--verbose",
			"--dangerously-skip-permissions", "--tools", "Bash,Read,Write,Edit,Glob,Grep"}
	},
	collect: func(t *testing.T, ctx context.Context, r *run) session {
		id := stdoutField(r.stdout, "type", "system", "session_id")
		if id == "" {
			t.Fatalf("no session_id in claude's stream-json output\n%s", r.diagnose())
		}
		s := nativeFile(t, r, filepath.Join(r.home, ".claude", "projects"), id+".jsonl")
		s.id = id
		return s
	},
}

// ---------------------------------------------------------------- Codex

var codex = &agentSpec{
	name:     "codex",
	bin:      "codex",
	protocol: fakemodel.Responses,
	script: fakemodel.Script{Replies: []fakemodel.Reply{
		{Thinking: "Start by seeing what is in the repository.", ToolCalls: []fakemodel.ToolCall{
			fn("exec_command", `{"cmd":"ls -A","workdir":"{CWD}"}`),
			fn("exec_command", `{"cmd":"rg --files --sort path -g '*.py'","workdir":"{CWD}"}`)}},
		{Text: "Reading the README and finding the functions.", ToolCalls: []fakemodel.ToolCall{
			fn("exec_command", `{"cmd":"cat README.md","workdir":"{CWD}"}`),
			fn("exec_command", `{"cmd":"rg -n --sort path 'def ' .","workdir":"{CWD}"}`)}},
		{ToolCalls: []fakemodel.ToolCall{{Type: "custom", Name: "apply_patch",
			Input: "*** Begin Patch\n*** Add File: NOTES.md\n+# Notes\n+\n+- greet() lives in greeter/util.py\n*** End Patch\n"}}},
		{Text: "Fixing the typo.", ToolCalls: []fakemodel.ToolCall{{Type: "custom", Name: "apply_patch",
			Input: "*** Begin Patch\n*** Update File: README.md\n@@\n # Greeter\n \n-A tiny greeter. It prints a greting.\n+A tiny greeter. It prints a greeting.\n*** End Patch\n"}}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("exec_command", `{"cmd":"git status --short","workdir":"{CWD}"}`)}},
		{Text: "Added NOTES.md and fixed the README typo; git status shows both changes."},
	}},
	configure: func(t *testing.T, r *run) map[string]string {
		codexHome := filepath.Join(r.home, ".codex")
		// A model slug Codex knows, so it offers that model's real tool set
		// (shell_command, freeform apply_patch, parallel calls) instead of fallbacks.
		r.write(t, filepath.Join("home", ".codex", "config.toml"), fmt.Sprintf(`model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false
enable_request_compression = false

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
wire_api = "responses"
env_key = "FAKE_MODEL_API_KEY"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
`, r.url))
		return map[string]string{"CODEX_HOME": codexHome, "FAKE_MODEL_API_KEY": fakeKey}
	},
	args: func(r *run) []string {
		return []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", taskPrompt}
	},
	collect: func(t *testing.T, ctx context.Context, r *run) session {
		id := stdoutField(r.stdout, "type", "thread.started", "thread_id")
		if id == "" {
			t.Fatalf("no thread.started in codex's --json output\n%s", r.diagnose())
		}
		s := nativeFile(t, r, filepath.Join(r.home, ".codex", "sessions"), "rollout-*-"+id+".jsonl")
		s.id = id
		return s
	},
}

// ---------------------------------------------------------------- OpenCode

var opencode = &agentSpec{
	name:     "opencode",
	bin:      "opencode",
	protocol: fakemodel.Chat,
	script: fakemodel.Script{Replies: []fakemodel.Reply{
		{Thinking: "Start by seeing what is in the repository.", Text: "Let me look around the project first.",
			ToolCalls: []fakemodel.ToolCall{
				fn("glob", `{"pattern":"**/*.py"}`),
				fn("bash", `{"command":"ls -A"}`)}},
		{Text: "Reading the README and finding the functions.", ToolCalls: []fakemodel.ToolCall{
			fn("read", `{"filePath":"{CWD}/README.md"}`),
			fn("grep", `{"pattern":"def ","path":"{CWD}","include":"*.py"}`)}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("write", `{"filePath":"{CWD}/NOTES.md","content":"# Notes\n\n- greet() lives in greeter/util.py\n"}`)}},
		{Text: "Fixing the typo.", ToolCalls: []fakemodel.ToolCall{
			fn("edit", `{"filePath":"{CWD}/README.md","oldString":"greting","newString":"greeting"}`)}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("bash", `{"command":"git status --short"}`)}},
		{Text: "Added NOTES.md and fixed the README typo; git status shows both changes."},
	}},
	configure: func(t *testing.T, r *run) map[string]string {
		r.write(t, filepath.Join("home", ".config", "opencode", "opencode.json"), fmt.Sprintf(`{
  "$schema": "https://opencode.ai/config.json",
  "model": "fake/fake-model",
  "small_model": "fake/fake-model",
  "autoupdate": false,
  "share": "disabled",
  "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny", "external_directory": "allow"},
  "provider": {
    "fake": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Fake",
      "options": {"baseURL": "%s/v1", "apiKey": "{env:FAKE_MODEL_API_KEY}"},
      "models": {"fake-model": {"name": "Fake model", "tool_call": true}}
    }
  }
}
`, r.url))
		return map[string]string{
			"FAKE_MODEL_API_KEY":               fakeKey,
			"OPENCODE_DISABLE_AUTOUPDATE":      "1",
			"OPENCODE_DISABLE_MODELS_FETCH":    "1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
			"OPENCODE_DISABLE_SHARE":           "1",
			"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
		}
	},
	args: func(r *run) []string {
		return []string{"run", "--format", "json", taskPrompt}
	},
	collect: func(t *testing.T, ctx context.Context, r *run) session {
		id := stdoutField(r.stdout, "type", "step_start", "sessionID")
		if id == "" {
			t.Fatalf("no sessionID in opencode's --format json output\n%s", r.diagnose())
		}
		// OpenCode keeps sessions in SQLite; its own export is the file form.
		out, errOut, err := r.exec(ctx, r.bin, "export", id)
		if err != nil {
			t.Fatalf("opencode export %s: %v\n%s", id, err, errOut)
		}
		if i := bytes.IndexByte(out, '{'); i > 0 {
			out = out[i:] // a progress line may precede the JSON
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("opencode export printed no JSON:\n%s", out)
		}
		return session{id: id, nativePath: ".local/share/opencode/opencode.db (opencode export " + id + ")",
			name: "export.json", data: out}
	},
}

// ---------------------------------------------------------------- Pi

// piKeyRef names the fake model's key in models.json as the release reads
// it: a bare variable name before 0.77.0, "$NAME" since (a bare string is
// then the key itself).
func piKeyRef(version string) string {
	if tested.MustSemver(version).Compare(tested.MustSemver("0.77.0")) < 0 {
		return "FAKE_MODEL_API_KEY"
	}
	return "$FAKE_MODEL_API_KEY"
}

var pi = &agentSpec{
	name:     "pi",
	bin:      "pi",
	protocol: fakemodel.Chat,
	script: fakemodel.Script{Replies: []fakemodel.Reply{
		{Thinking: "Start by seeing what is in the repository.", Text: "Let me look around the project first.",
			ToolCalls: []fakemodel.ToolCall{
				fn("ls", `{"path":"."}`),
				fn("find", `{"pattern":"**/*.py"}`)}},
		{Text: "Reading the README and finding the functions.", ToolCalls: []fakemodel.ToolCall{
			fn("read", `{"path":"README.md"}`),
			fn("grep", `{"pattern":"def ","glob":"*.py"}`)}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("write", `{"path":"NOTES.md","content":"# Notes\n\n- greet() lives in greeter/util.py\n"}`)}},
		{Text: "Fixing the typo.", ToolCalls: []fakemodel.ToolCall{
			fn("edit", `{"path":"README.md","edits":[{"oldText":"greting","newText":"greeting"}]}`)}},
		{ToolCalls: []fakemodel.ToolCall{
			fn("bash", `{"command":"git status --short"}`)}},
		{Text: "Added NOTES.md and fixed the README typo; git status shows both changes."},
	}},
	configure: func(t *testing.T, r *run) map[string]string {
		r.write(t, filepath.Join("home", ".pi", "agent", "models.json"), fmt.Sprintf(`{
  "providers": {
    "fake": {
      "baseUrl": "%s/v1",
      "api": "openai-completions",
      "apiKey": %q,
      "models": [{"id": "fake-model", "name": "Fake model"}]
    }
  }
}
`, r.url, piKeyRef(r.rel.Version)))
		return map[string]string{"FAKE_MODEL_API_KEY": fakeKey, "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
	},
	args: func(r *run) []string {
		return []string{"--mode", "json", "--provider", "fake", "--model", "fake-model",
			"--tools", "read,bash,edit,write,grep,find,ls", taskPrompt}
	},
	collect: func(t *testing.T, ctx context.Context, r *run) session {
		id := stdoutField(r.stdout, "type", "session", "id")
		if id == "" {
			t.Fatalf("no session header in pi's --mode json output\n%s", r.diagnose())
		}
		s := nativeFile(t, r, filepath.Join(r.home, ".pi", "agent", "sessions"), "*_"+id+".jsonl")
		s.id = id
		return s
	},
}
