package pi

import (
	"errors"
	"path/filepath"

	"github.com/tidwall/gjson"

	"github.com/pvisor/pvisor/replay/launch"
)

// resume: `pi --mode json --session <id>` (or --fork <id>) with a
// models.json that sends the session's provider to the bridge. Pi takes the
// prompt as an argument.
var resume = launch.Resume{
	Command:   resumeCommand,
	SessionID: launch.StreamID("type", "session", "id"),
	Text:      outputText,
}

func resumeCommand(c launch.ResumeCall) (launch.ResumeCommand, error) {
	var provider, model string
	err := launch.ScanLines(c.Main, func(line []byte) {
		rec := gjson.ParseBytes(line)
		switch rec.Get("type").Str {
		case "model_change":
			provider, model = rec.Get("provider").Str, rec.Get("modelId").Str
		case "message":
			if p := rec.Get("message.provider").Str; p != "" && rec.Get("message.model").Str != "" {
				provider, model = p, rec.Get("message.model").Str
			}
		}
	})
	if err != nil {
		return launch.ResumeCommand{}, err
	}
	if provider == "" || model == "" {
		return launch.ResumeCommand{}, errors.New("the session names no provider and model (model_change entries or assistant messages)")
	}
	data, err := ModelsJSON(c.Bridge.URL, provider, model, c.Version)
	if err != nil {
		return launch.ResumeCommand{}, err
	}
	if err := launch.WriteConfig(filepath.Join(c.Root, "models.json"), data, c.Backup); err != nil {
		return launch.ResumeCommand{}, err
	}
	flag := "--session"
	if c.Fork {
		flag = "--fork"
	}
	args := append([]string{"--mode", "json", "--provider", provider, "--model", model}, c.Args...)
	args = append(args, flag, c.SID, c.Prompt)
	env := append([]string{"PI_CODING_AGENT_DIR=" + c.Root}, quietEnv(c.Home)...)
	env = append(env, tokenEnv+"="+c.Bridge.Token)
	return launch.ResumeCommand{Command: launch.Command{Args: args, Env: env}, Meta: map[string]any{"pi_provider": provider, "pi_model": model},
		Configs: []string{filepath.Join(c.Root, "models.json")}}, nil
}

// quietEnv keeps Pi offline, without update checks or telemetry, with its
// XDG directories in home.
func quietEnv(home string) []string {
	return []string{"PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"NO_COLOR=1", "TERM=dumb"}
}

// outputText: --mode json message_end events of assistant messages.
func outputText(line []byte) string {
	if gjson.GetBytes(line, "type").Str != "message_end" || gjson.GetBytes(line, "message.role").Str != "assistant" {
		return ""
	}
	return launch.TextBlocks(gjson.GetBytes(line, "message.content"))
}
