package replay

import (
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
	"github.com/pvisor/pvisor/trajectory"
	"github.com/pvisor/pvisor/trajectory/agents"
)

type (
	resumeSpec    = launch.Resume
	resumeCall    = launch.ResumeCall
	resumeCommand = launch.ResumeCommand
)

// resumeSpecs are the agents pvisor resume and fork support: file-backed
// sessions with native resume and fork flags (reference/capture.md §5.4).
var resumeSpecs = map[string]resumeSpec{
	trajectory.ClaudeCode: {Command: claudeResume, SessionID: launch.StreamID("type", "system", "session_id"), Text: claudeText},
	trajectory.Codex:      {Command: codexResume, SessionID: launch.StreamID("type", "thread.started", "thread_id"), Text: codexText},
}

// claudeText: stream-json assistant messages' text blocks.
func claudeText(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "assistant" {
		return ""
	}
	return launch.TextBlocks(gjson.GetBytes(line, "message.content"))
}

// codexText: --json agent_message items.
func codexText(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "item.completed" || gjson.GetBytes(line, "item.type").Str != "agent_message" {
		return ""
	}
	return gjson.GetBytes(line, "item.text").Str
}

// resumeSpecOf is how agent's CLI resumes and forks.
func resumeSpecOf(agent string) (resumeSpec, bool) {
	agent = agents.Canonical(agent)
	if spec, ok := resumeSpecs[agent]; ok {
		return spec, true
	}
	if a, ok := agents.Get(agent); ok && a.Resume != nil {
		return *a.Resume, true
	}
	return resumeSpec{}, false
}

// ResumeAgents names the agents pvisor resume and fork support.
func ResumeAgents() []string { return resumeAgents() }

// resumeAgents names the agents pvisor resume and fork support.
func resumeAgents() []string {
	var out []string
	for _, a := range agents.Names() {
		if _, ok := resumeSpecOf(a); ok {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// claudeResume: --resume in print mode with the prompt on stdin;
// --fork-session gives the continuation a new id.
func claudeResume(c resumeCall) (resumeCommand, error) {
	args := []string{"--print", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--resume", c.SID}
	if c.Fork {
		args = append(args, "--fork-session")
	}
	meta := map[string]any{}
	data, err := os.ReadFile(c.Main)
	if err != nil {
		return resumeCommand{}, err
	}
	if m := recordedModel(data, c.Args); m != "" {
		args = append(args, "--model", m)
		meta["model_flag"] = map[string]any{"model": m, "source": "the model of the session's last response"}
	}
	args = append(args, c.Args...)
	env := []string{
		"CLAUDE_CONFIG_DIR=" + c.Root,
		"ANTHROPIC_BASE_URL=" + c.Bridge.URL,
		"ANTHROPIC_API_KEY=" + c.Bridge.Token,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1",
		"IS_SANDBOX=1",
	}
	return resumeCommand{Command: Command{Args: args, Env: env, Stdin: []byte(c.Prompt)}, Meta: meta}, nil
}

// builtinCodexProviders cannot be redefined in config.toml.
var builtinCodexProviders = []string{"openai", "oss", "ollama", "lmstudio"}

// codexResume: `codex exec resume|fork <id> -` with the prompt on stdin and a
// config.toml whose provider is the bridge. The provider keeps the name the
// session recorded, so Codex sees no provider switch.
func codexResume(c resumeCall) (resumeCommand, error) {
	provider, model := codexProvider, ""
	err := launch.ScanLines(c.Main, func(line []byte) {
		switch gjson.GetBytes(line, "type").Str {
		case "session_meta":
			if p := gjson.GetBytes(line, "payload.model_provider").Str; p != "" && !slices.Contains(builtinCodexProviders, p) && runIDPattern.MatchString(p) {
				provider = p
			}
		case "turn_context":
			if m := gjson.GetBytes(line, "payload.model").Str; m != "" {
				model = m
			}
		}
	})
	if err != nil {
		return resumeCommand{}, err
	}
	if err := launch.WriteConfig(filepath.Join(c.Root, "config.toml"), codexConfig(provider, model, c.Bridge.URL), c.Backup); err != nil {
		return resumeCommand{}, err
	}
	sub := "resume"
	if c.Fork {
		sub = "fork"
	}
	args := append([]string{"exec", sub, "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}, c.Args...)
	args = append(args, c.SID, "-")
	env := []string{"CODEX_HOME=" + c.Root, codexTokenEnv + "=" + c.Bridge.Token}
	return resumeCommand{Command: Command{Args: args, Env: env, Stdin: []byte(c.Prompt)},
		Meta: map[string]any{"codex_provider": provider, "codex_model": model}, Configs: []string{filepath.Join(c.Root, "config.toml")}}, nil
}

// launcher is the launcher of the session's agent: its binary and protocol
// serve resume and fork too (every resumable agent has one).
func (r *sessionRun) launcher() Launcher {
	l, _ := launcherOf(r.store.Agent())
	return l
}
