package codex

import (
	"path/filepath"
	"regexp"
	"slices"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
)

// resume: `codex exec resume|fork <id> -` with the prompt on stdin and a
// config.toml whose provider is the bridge. The thread id is in the --json
// thread.started event.
var resume = launch.Resume{
	Command:   resumeCommand,
	SessionID: launch.StreamID("type", "thread.started", "thread_id"),
	Text:      outputText,
	Compacted: func(body []byte) bool { return compacted(gjson.GetBytes(body, "input").Array()) },
}

// builtinProviders cannot be redefined in config.toml.
var builtinProviders = []string{"openai", "oss", "ollama", "lmstudio"}

// providerID is a provider name config.toml can take as a bare table key
// ([model_providers.<id>]); any other name is replaced by the bridge's.
var providerID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// resumeCommand keeps the provider name the session recorded, so Codex sees
// no provider switch.
func resumeCommand(c launch.ResumeCall) (launch.ResumeCommand, error) {
	provider, model := bridgeProvider, ""
	err := launch.ScanLines(c.Main, func(line []byte) {
		switch gjson.GetBytes(line, "type").Str {
		case "session_meta":
			if p := gjson.GetBytes(line, "payload.model_provider").Str; p != "" && !slices.Contains(builtinProviders, p) && providerID().MatchString(p) {
				provider = p
			}
		case "turn_context":
			if m := gjson.GetBytes(line, "payload.model").Str; m != "" {
				model = m
			}
		}
	})
	if err != nil {
		return launch.ResumeCommand{}, err
	}
	if err := launch.WriteConfig(filepath.Join(c.Root, "config.toml"), config(provider, model, c.Bridge.URL), c.Backup); err != nil {
		return launch.ResumeCommand{}, err
	}
	sub := "resume"
	if c.Fork {
		sub = "fork"
	}
	args := append([]string{"exec", sub, "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}, c.Args...)
	args = append(args, c.SID, "-")
	env := []string{"CODEX_HOME=" + c.Root, tokenEnv + "=" + c.Bridge.Token}
	return launch.ResumeCommand{Command: launch.Command{Args: args, Env: env, Stdin: []byte(c.Prompt)},
		Meta: map[string]any{"codex_provider": provider, "codex_model": model}, Configs: []string{filepath.Join(c.Root, "config.toml")}}, nil
}

// outputText: --json agent_message items.
func outputText(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "item.completed" || gjson.GetBytes(line, "item.type").Str != "agent_message" {
		return ""
	}
	return gjson.GetBytes(line, "item.text").Str
}
